"""A history table's rows built from its Arrow columns, and the kind of column each field is.

Rows were validated when written, so they are not validated again: plain columns are
taken as Arrow gives them, nested ones (JSON texts, intervals as numbers) parsed and
typed a column at a time (:mod:`evalrunner.history._columnar` reads the columns)."""

from __future__ import annotations

import functools
import typing
from collections.abc import Sequence
from enum import StrEnum
from types import UnionType
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, TypeAdapter

from evalrunner.history._values import _index_array, _is_text, _pylist


def plain_kind(annotation: object) -> str | None:
    """The Arrow type name of a plain field (``Optional`` unwrapped), or None if nested."""
    if get_origin(annotation) in (typing.Union, UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return plain_kind(rest[0]) if len(rest) == 1 else None
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        return "string" if all(isinstance(v, str) for v in values) else None
    if isinstance(annotation, type) and issubclass(annotation, StrEnum):
        return "string"  # written as its members' strings, like a Literal of them
    kinds: dict[object, str] = {str: "string", bool: "bool", int: "int64", float: "float64"}
    return kinds.get(annotation)


def is_pair(annotation: object) -> bool:
    """Whether a field is an interval: two numbers (``Optional`` unwrapped)."""
    if get_origin(annotation) in (typing.Union, UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return len(rest) == 1 and is_pair(rest[0])
    return get_origin(annotation) is tuple and get_args(annotation) == (float, float)


@functools.cache
def _column_adapter(model: type[BaseModel], field: str) -> TypeAdapter[list[Any]]:
    item: Any = model.model_fields[field].annotation
    return TypeAdapter(list[item])


def rows_of(
    pf: Any, group: int, name: str, model: type[BaseModel], indices: Sequence[int] | None
) -> list[BaseModel]:
    """The rows of one table (those at ``indices``) as ``model`` instances, not validated again."""
    if indices is not None and not indices:
        return []  # (pyarrow cannot take an empty, hence untyped, list of indices)
    prefix = f"{name}."
    present = {c[len(prefix) :]: c for c in pf.schema_arrow.names if c.startswith(prefix)}
    fields = [f for f in model.model_fields if f in present]
    table = pf.read_row_group(group, columns=[present[f] for f in fields])
    if indices is not None:
        table = table.take(_index_array(indices))
    return _instances(model, fields, table.columns)


def _instances(model: type[BaseModel], fields: list[str], columns: list[Any]) -> list[BaseModel]:
    """The rows of these Arrow columns (one per field) as ``model`` instances."""
    values = [
        _column_values(model, field, column) for field, column in zip(fields, columns, strict=True)
    ]
    # A field this file predates gets its default, as validation would give it.
    defaults = {f: field_default(model, f) for f in model.model_fields if f not in fields}
    return [_unvalidated(model, fields, row, defaults) for row in zip(*values, strict=True)]


def field_default(model: type[BaseModel], field: str) -> Any:
    """A field's default value, as validation gives it to a row that leaves the field out."""
    return model.model_fields[field].get_default(call_default_factory=True)


def _column_values(model: type[BaseModel], field: str, column: Any) -> list[Any]:
    """One Arrow column of a table as the field's values (JSON texts parsed and typed)."""
    if plain_kind(model.model_fields[field].annotation) is None:
        if not _is_text(column.type):  # intervals, as numbers since format 5
            return _column_adapter(model, field).validate_python(column.to_pylist())
        text = "[" + ",".join(_pylist(column)) + "]"
        return _column_adapter(model, field).validate_json(text)
    return _pylist(column)


def _unvalidated(
    model: type[BaseModel], fields: list[str], row: tuple[Any, ...], defaults: dict[str, Any]
) -> BaseModel:
    """A ``model`` instance of values validated when they were written, not validated again."""
    obj = model.__new__(model)
    state = dict(zip(fields, row, strict=True))
    state.update(defaults)
    object.__setattr__(obj, "__dict__", state)
    object.__setattr__(obj, "__pydantic_fields_set__", set(fields))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj
