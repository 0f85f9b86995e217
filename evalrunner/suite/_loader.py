"""Reading suite files: YAML in, a resolved :class:`~evalrunner.suite._settings.Suite` out.

A suite is one YAML file in ``suites/`` whose stem is the suite's name.
:func:`load_suite` turns every problem into a one-line
:class:`~evalrunner.errors.ConfigError` naming the file, line, scenario and
field, with a "did you mean" where one helps.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from evalrunner._jsonio import pydantic_message
from evalrunner.errors import ConfigError
from evalrunner.suite._schema import FORMAT_VERSION, SUPPORTED_FORMAT_VERSIONS, version_problem
from evalrunner.suite._settings import Suite, resolve_suite
from evalrunner.suite._suite_spec import ScenarioSpec, SuiteSpec

__all__ = ["SUITE_SUFFIXES", "field_line", "find_suites", "load_suite", "load_suite_by_name"]

SUITE_SUFFIXES = (".yaml", ".yml")
BUILT_IN_EXAMPLE = Path(__file__).resolve().parent.parent / "example.yaml"
"""The example suite every install has: ``--suite example`` finds it when no
``suites/example.yaml`` of the project's own is there."""

Loc = tuple[str | int, ...]


# ----------------------------------------------------------------------------- YAML


class _Loader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys instead of silently keeping the last."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # '<<' merges may override keys on purpose
        key = loader.construct_object(key_node, deep=True)
        try:
            earlier = seen.get(key)
        except TypeError:
            continue  # unhashable key: construct_mapping reports it
        if earlier is not None:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first at line {earlier.start_mark.line + 1}); remove one",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _parse_yaml(text: str, shown: str) -> tuple[Any, yaml.Node | None]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark is not None else shown
        problem = exc.problem or exc.context or "cannot parse"
        hint = "; indent with spaces, not tabs" if "'\\t'" in problem else ""
        raise ConfigError(_one_line(f"{where}: invalid YAML: {problem}{hint}")) from None
    except yaml.YAMLError as exc:
        raise ConfigError(_one_line(f"{shown}: invalid YAML: {exc}")) from None
    finally:
        loader.dispose()
    return data, node


# ------------------------------------------------------------------ the reporter


class _Reporter:
    """Turns a location in the parsed file into 'path:line: scenarios[2] (id 'x').field'."""

    def __init__(self, shown: str, data: Any, node: yaml.Node | None) -> None:
        self.shown = shown
        self.data = data
        self.node = node

    def error(
        self, loc: Sequence[str | int], what: str, *, at: Sequence[str | int] | None = None
    ) -> ConfigError:
        """An error about the field at `loc`, whose line is that of `at` (default `loc`)."""
        line = self.line(loc if at is None else at)
        prefix = f"{self.shown}:{line}" if line is not None else self.shown
        field = self._field(loc)
        message = f"{prefix}: {field}: {what}" if field else f"{prefix}: {what}"
        return ConfigError(_one_line(message))

    def _field(self, loc: Sequence[str | int]) -> str:
        out = ""
        for i, part in enumerate(loc):
            if isinstance(part, int):
                out += f"[{part}]"
                if i == 1 and loc[0] == "scenarios":
                    scenario_id = self._scenario_id(part)
                    if scenario_id is not None:
                        out += f" (id {scenario_id!r})"
            elif re.fullmatch(r"[A-Za-z_][\w-]*", part):
                out += f".{part}" if out else part
            else:
                out += f"[{part!r}]"
        return out

    def _scenario_id(self, index: int) -> str | None:
        scenarios = self.data.get("scenarios") if isinstance(self.data, dict) else None
        if isinstance(scenarios, list) and 0 <= index < len(scenarios):
            entry = scenarios[index]
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                return str(entry["id"])
        return None

    def line(self, loc: Sequence[str | int]) -> int | None:
        """1-based line of the key at `loc` (of its nearest existing parent if it is missing)."""
        node = self.node
        if node is None:
            return None
        mark = node.start_mark
        for part in loc:
            found = _child(node, part)
            if found is None:
                break
            node, mark = found
        return mark.line + 1


def _child(node: yaml.Node, part: str | int) -> tuple[yaml.Node, yaml.Mark] | None:
    """The node under ``part`` of ``node`` and where it starts (a mapping's: its key), or
    None where ``node`` has no such child."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return value, key.start_mark
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        child = node.value[part]
        return child, child.start_mark
    return None


# -------------------------------------------------- pydantic errors, in words


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = SuiteSpec
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        model = _model_in(model.model_fields[part].annotation)
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return f"{value} (a whole number)"
    if isinstance(value, float):
        return f"{value:g} (a number)"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"{shown!r} (text)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _first_sentence(info: FieldInfo) -> str:
    text = info.description or ""
    sentence = text.split("; ")[0].split(". ")[0].rstrip(".")
    return sentence[:1].lower() + sentence[1:]


def _unknown_field(model: type[BaseModel] | None, key: str) -> str:
    what = f"unknown field {key!r}"
    if model is None:
        return what
    fields = list(model.model_fields)
    if model is SuiteSpec and key in ScenarioSpec.model_fields:
        return f"{what}; it is a scenario field: put it inside an entry of 'scenarios'"
    for name, info in model.model_fields.items():
        nested = _model_in(info.annotation)
        if nested is not None and key in nested.model_fields:
            return f"{what}; it belongs under '{name}'"
    close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
    if close:
        return f"{what}; did you mean {close[0]!r}?"
    return f"{what}; known fields: {', '.join(fields)}"


_TYPE_NAMES = {
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "text",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping of fields",
    "model_attributes_type": "a mapping of fields",
}

_BOUNDS = {
    "greater_than_equal": ("at least", "ge"),
    "greater_than": ("greater than", "gt"),
    "less_than_equal": ("at most", "le"),
    "less_than": ("less than", "lt"),
}


def _looks_like(kind: str, text: str) -> bool:
    """Whether quoted `text` would have been what `kind` expects without the quotes."""
    if kind == "bool_type":
        return text.strip().lower() in ("true", "false")
    if kind in ("int_type", "float_type"):
        try:
            float(text)
        except ValueError:
            return False
        return True
    return False


Explained = tuple[Loc, str, Loc]
"""(field shown, what is wrong, where in the file)."""


def _ours(loc: Loc, ctx: Mapping[str, Any], value: Any) -> Explained:
    at = loc + tuple(ctx["suffix"])
    return at, str(ctx["message"]), at


def _missing(loc: Loc, ctx: Mapping[str, Any], value: Any) -> Explained:
    name = str(loc[-1])
    model = _model_at(loc[:-1])
    info = model.model_fields.get(name) if model is not None else None
    about = f" ({_first_sentence(info)})" if info is not None and info.description else ""
    if name == "format_version":
        about = f"; add 'format_version: {FORMAT_VERSION}' at the top of the file"
    elif isinstance(value, Mapping):
        about += _misspelt(name, value, model)
    return loc[:-1], f"missing required field {name!r}{about}", loc[:-1]


def _misspelt(name: str, value: Mapping[Any, Any], model: type[BaseModel] | None) -> str:
    """A misspelt key is reported missing first: name the spelling that was there ('' if
    no key of ``value`` is close)."""
    known = model.model_fields if model is not None else {}
    strays = [k for k in value if isinstance(k, str) and k not in known]
    close = difflib.get_close_matches(name, strays, n=1, cutoff=0.6)
    return f"; did you mean {name!r} where it says {close[0]!r}?" if close else ""


def _extra(loc: Loc, ctx: Mapping[str, Any], value: Any) -> Explained:
    return loc[:-1], _unknown_field(_model_at(loc[:-1]), str(loc[-1])), loc


def _too_short(loc: Loc, ctx: Mapping[str, Any], value: Any) -> Explained:
    if loc == ("scenarios",):
        return loc, "must list at least one scenario", loc
    return loc, f"must have at least {ctx.get('min_length')} item(s)", loc


def _finite(loc: Loc, ctx: Mapping[str, Any], value: Any) -> Explained:
    return loc, f"must be a finite number, got {value}", loc


def _invalid_key(loc: Loc, ctx: Mapping[str, Any], value: Any) -> Explained:
    return loc[:-1], f"field names must be text, got {_describe(value)}", loc


_HANDLERS: dict[str, Callable[[Loc, Mapping[str, Any], Any], Explained]] = {
    "evalrunner": _ours,
    "missing": _missing,
    "extra_forbidden": _extra,
    "too_short": _too_short,
    "finite_number": _finite,
    "invalid_key": _invalid_key,
}


def _wrong_type(kind: str, loc: Loc, value: Any) -> Explained:
    what = f"expected {_TYPE_NAMES[kind]}, got {_describe(value)}"
    field = loc[-1] if loc else None
    hint = _list_hint(field, value) if kind == "list_type" else None
    if hint is not None:
        what += hint
    elif field is not None and isinstance(value, dict) and list(value) == ["task"]:
        # [python, agent.py, {task}]: YAML reads an unquoted {task} as a mapping.
        what += '; quote it: "{task}"'
    elif isinstance(value, str) and _looks_like(kind, value):
        what += "; remove the quotes"
    return loc, what, loc


def _list_hint(field: str | int | None, value: Any) -> str | None:
    """How to write as a list what was given otherwise (None: nothing to say)."""
    if field == "scenarios" and not isinstance(value, dict):
        return "; give each scenario as an item starting with '- id: '"
    if field == "command" and isinstance(value, str):
        # One argument per item, as the program gets them; JSON-quoted, as YAML's flow
        # style reads '{task}' unquoted as a mapping.
        argv = ", ".join(json.dumps(arg) for arg in _split(value))
        return f"; write it as a list, one argument an item: [{argv}]"
    if isinstance(value, str | int | float):
        return f"; write it as a list: [{value}]"
    if isinstance(value, dict):
        return "; start each item on its own line with '- '"
    return None


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # an unclosed quote: split on spaces, and let the user see it
        return command.split()


def _explain(err: Mapping[str, Any]) -> Explained:
    """(field shown, what is wrong, where in the file) for one pydantic error."""
    loc: Loc = tuple(err["loc"])
    if loc and loc[-1] == "[key]":  # a mapping key failed: point at the key itself
        loc = loc[:-1]
    kind: str = err["type"]
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    value = err.get("input")
    if kind in _HANDLERS:
        return _HANDLERS[kind](loc, ctx, value)
    if kind == "value_error":
        return loc, pydantic_message(err), loc
    if kind in _TYPE_NAMES:
        return _wrong_type(kind, loc, value)
    if kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        return loc, f"must be {words} {_number(ctx[key])}, got {_describe(value)}", loc
    return loc, str(err["msg"]), loc


# -------------------------------------------------------------------------- loading


def _read(file: Path, shown: str) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        if file.is_symlink():
            raise ConfigError(
                f"{shown}: a link to {os.readlink(file)}, which does not exist; "
                "point it at a suite file or remove it"
            ) from None
        try:
            nearby = sorted(find_suites(file.parent))
        except ConfigError:
            nearby = []
        hint = f"; suites there: {', '.join(nearby)}" if nearby else ""
        if not file.suffix and file.parent == Path():
            # A name, not a path: the CLI's --suite NAME is load_suite_by_name in Python.
            hint += f"; a suite by its name: evalrunner.suite.load_suite_by_name({file.name!r})"
        raise ConfigError(f"{shown}: no such file{hint}") from None
    except IsADirectoryError:
        raise ConfigError(f"{shown}: is a directory, not a suite file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read: {exc.strerror}") from None


def _validate(data: Any, shown: str, report: _Reporter) -> SuiteSpec:
    if data is None:
        raise ConfigError(
            f"{shown}: the file is empty; a suite starts with 'format_version: {FORMAT_VERSION}'"
        )
    if not isinstance(data, dict):
        raise report.error(
            (),
            f"the top level must be a mapping of fields (format_version, name, scenarios, ...), got {_describe(data)}",
        )
    if "format_version" in data and data["format_version"] not in SUPPORTED_FORMAT_VERSIONS:
        # Checked first: a newer file may use fields this version does not know.
        raise report.error(("format_version",), version_problem(data["format_version"]))
    try:
        return SuiteSpec.model_validate(data)
    except ValidationError as exc:
        loc, what, at = _explain(exc.errors(include_url=False)[0])
        raise report.error(loc, what, at=at) from None


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Read, validate and resolve one suite file; every problem is a one-line ConfigError."""
    shown = os.fspath(path)
    file = Path(path)
    data, node = _parse_yaml(_read(file, shown), shown)
    report = _Reporter(shown, data, node)
    spec = _validate(data, shown, report)
    if spec.name != file.stem:
        raise report.error(
            ("name",),
            f"{spec.name!r} does not match the file name {file.name!r}; "
            f"rename the file to {spec.name}{file.suffix or '.yaml'} or set name: {file.stem}",
        )
    origins = [
        f"{shown}:{report.line(('scenarios', i, 'agent' if entry.command is None else 'command'))}: "
        f"scenarios[{i}] (id '{entry.id}')"
        for i, entry in enumerate(spec.scenarios)
    ]
    return resolve_suite(spec, path=file, origins=origins)


def field_line(path: str | os.PathLike[str], loc: Sequence[str | int]) -> int | None:
    """1-based line of the field at ``loc`` in a suite file (None when it cannot be read).

    For messages about a field found wrong after loading (a model litellm does not know).
    """
    try:
        data, node = _parse_yaml(Path(path).read_text(encoding="utf-8"), os.fspath(path))
    except (OSError, UnicodeDecodeError, ConfigError):
        return None
    return _Reporter(os.fspath(path), data, node).line(loc)


def find_suites(root: str | os.PathLike[str] = "suites") -> dict[str, Path]:
    """Suite name -> file for every ``*.yaml``/``*.yml`` directly in `root`, sorted by name."""
    directory = Path(root)
    if not directory.is_dir():
        return {}
    found: dict[str, Path] = {}
    for file in sorted(directory.iterdir()):
        if file.suffix not in SUITE_SUFFIXES or file.name.startswith(".") or not file.is_file():
            continue
        if file.stem in found:
            raise ConfigError(
                f"{file}: suite {file.stem!r} is defined twice ({found[file.stem].name} and {file.name}); "
                "remove one"
            )
        found[file.stem] = file
    return dict(sorted(found.items()))


def load_suite_by_name(name: str, root: str | os.PathLike[str] = "suites") -> Suite:
    """Load ``<root>/<name>.yaml``; a path ending in .yaml/.yml is loaded as is."""
    if name.endswith(SUITE_SUFFIXES):
        return load_suite(name)
    suites = find_suites(root)
    if name in suites:
        return load_suite(suites[name])
    if name == BUILT_IN_EXAMPLE.stem:
        # The example suite ships inside the package (suites/example.yaml in a checkout is
        # a link to it), so a fresh install can run the README's main job anywhere.
        return load_suite(BUILT_IN_EXAMPLE)
    shown = os.fspath(root)
    for suffix in SUITE_SUFFIXES:
        there = Path(root) / f"{name}{suffix}"
        if there.is_symlink() or there.is_dir():
            return load_suite(there)  # says what the path is instead of "no suite"
    if not suites:
        state = "does not exist" if not Path(root).is_dir() else "has no suite files"
        raise ConfigError(f"no suite named {name!r}: {shown}/ {state}; create {shown}/{name}.yaml")
    close = difflib.get_close_matches(name, list(suites), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(f"no suite named {name!r} in {shown}/; {hint}available: {', '.join(suites)}")
