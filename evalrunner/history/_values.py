"""Arrow columns of a history file as Python values and float arrays: texts of few
distinct values shared, intervals parsed from their JSON without an object apiece, numbers
as arrays. What :mod:`evalrunner.history._columnar` hands its readers."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]


def _values(read: Any) -> list[Any]:
    """What :meth:`ColumnarFile._read` handed over, as Python values."""
    return read if isinstance(read, list) else _pylist(read)


def float_array(values: Sequence[Any]) -> FloatArray:
    import numpy as np  # not at import time: every command imports this module

    return np.array([math.nan if v is None else v for v in values], dtype=float)


def parsed(values: list[Any]) -> list[Any]:
    """The JSON texts among ``values`` parsed (intervals quickly); other values, parsed already, kept.

    For fields whose parsed values are never text (intervals, lists, dicts).
    """
    at = [i for i, v in enumerate(values) if isinstance(v, str)]
    if not at:
        return values
    texts = [values[i] for i in at]
    done = _pairs(texts)
    if done is None:
        done = json.loads("[" + ",".join(texts) + "]")
    if len(at) == len(values):
        return done
    out = list(values)
    for i, value in zip(at, done, strict=True):
        out[i] = value
    return out


def _pairs(texts: list[str]) -> list[Any] | None:
    """A JSON column of number pairs or nulls ('[0.1,0.2]', 'null': intervals) as pairs, or
    None when it holds anything else: json.loads of a year of intervals takes seconds."""
    flat = _flat_pairs(texts)
    if flat is None:
        return None
    pairs: list[Any] = list(zip(flat[0::2], flat[1::2], strict=True))
    for i, text in enumerate(texts):
        if text == "null":
            pairs[i] = None
    return pairs


def _flat_pairs(texts: Sequence[Any]) -> list[float] | None:
    """The numbers of JSON pairs, two a text ('null': NaN, NaN), or None if one is not a pair."""
    inner = []
    for text in texts:
        if text == "null":
            inner.append("nan,nan")
        elif isinstance(text, str) and text[:1] == "[" and text[-1:] == "]":
            inner.append(text[1:-1])
        else:
            return None
    numbers = ",".join(inner).split(",") if inner else []
    if len(numbers) != 2 * len(texts):
        return None
    try:
        return [float(x) for x in numbers]  # JSON's NaN and Infinity read as json.loads reads them
    except ValueError:
        return None


def arrow_pairs(column: Any) -> FloatArray | None:
    """A column of intervals as an (n, 2) array: two numbers a row (history format 5), or
    the JSON texts earlier formats wrote ('[0.1,0.2]', 'null') parsed inside
    Arrow (a year of an organisation's intervals took the report seconds in Python); None
    when it holds anything else. Options, not Python scalars, and the array taken from its
    buffer: pyarrow converting either imports pandas. No regular expression: each text
    bracketed and split in two is a pair once both halves cast to numbers (a stray bracket
    or comma does not), at less than half the cost of matching one."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_fixed_size_list(column.type):
        return _number_pairs(column)
    if not pa.types.is_string(column.type) or column.null_count:
        return None
    texts = pc.replace_substring(column, pattern="null", replacement="[nan,nan]")
    bracketed = pc.and_(pc.starts_with(texts, pattern="["), pc.ends_with(texts, pattern="]"))
    if len(column) and not pc.all(bracketed).as_py():
        return None
    halves = pc.split_pattern(pc.utf8_slice_codeunits(texts, start=1, stop=-1), pattern=",")
    counts = pc.min_max(pc.list_value_length(halves)).as_py()
    if len(column) and (counts["min"], counts["max"]) != (2, 2):
        return None
    try:
        numbers = pc.cast(pc.list_flatten(halves), pa.float64())
    except pa.ArrowInvalid:
        return None  # not numbers after all: the slow path says what they are
    flat = np.frombuffer(
        numbers.buffers()[1], dtype=np.float64, count=len(numbers), offset=numbers.offset * 8
    )
    return flat.reshape(-1, 2).copy()


def _number_pairs(column: Any) -> FloatArray:
    """A column of two-number lists (intervals since history format 5) as an (n, 2) array,
    a null as NaN, NaN: from the buffer of its numbers, as :func:`_floats_of` reads one."""
    import numpy as np
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    numbers = column.values.slice(column.offset * 2, n * 2)  # a null's slots included
    out: FloatArray = np.array(_floats_of(numbers), dtype=np.float64).reshape(n, 2)
    if column.null_count:
        out[~_valid(column)] = np.nan
    return out


def pair_array(values: Sequence[Any]) -> FloatArray:
    """Intervals as an (n, 2) array, a missing one as NaN, NaN: from their JSON texts, or
    from pairs and None already parsed."""
    import numpy as np

    flat = _flat_pairs(values)
    if flat is not None:
        return np.array(flat, dtype=float).reshape(-1, 2)
    values = parsed(list(values))
    out = np.full((len(values), 2), math.nan)
    present = [i for i, v in enumerate(values) if v is not None]
    if present:
        out[present] = np.array([values[i] for i in present], dtype=float)
    return out


_SHARED_FROM = 64
"""Text columns at least this long are read with one object per distinct value."""


class Words:
    """A text column of few distinct values (scenario, model, metric, verdict, outcome) held
    as small integer codes into its distinct values: 1 or 2 bytes a row where a list of
    them held 8 (a year of an organisation's nights is 7 million such rows a column).
    :meth:`values` gives the list, its equal values one object, anew on each call;
    ``words`` and ``codes`` let a reader compute over the rows without one."""

    __slots__ = ("codes", "words")

    def __init__(self, words: Sequence[Any], codes: Any) -> None:
        import numpy as np

        self.words = np.empty(len(words), dtype=object)
        self.words[:] = list(words)  # (np.array would read a list of lists as a matrix)
        self.codes = codes.astype(np.min_scalar_type(max(len(words) - 1, 0)))

    @classmethod
    def of(cls, values: Sequence[Any]) -> Words:
        """The words of a column read as Python values."""
        import numpy as np

        seen: dict[Any, int] = {}
        codes = [seen.setdefault(v, len(seen)) for v in values]
        return cls(list(seen), np.array(codes, dtype=np.int64))

    @classmethod
    def joined(cls, parts: Sequence[Words]) -> Words:
        """Several columns' rows, one after another."""
        import numpy as np

        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0, *(len(p.words) for p in parts[:-1])])
        codes = [p.codes.astype(np.int64) + at for p, at in zip(parts, offsets, strict=True)]
        words = [w for p in parts for w in p.words]
        return cls(words, np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64))

    def take(self, rows: Any) -> Words:
        """The rows at ``rows`` (an index array), the same words."""
        taken = Words.__new__(Words)
        taken.words, taken.codes = self.words, self.codes[rows]
        return taken

    def __len__(self) -> int:
        return len(self.codes)

    def values(self) -> list[Any]:
        picked: list[Any] = self.words[self.codes].tolist()
        return picked


def _shared_strings(column: Any) -> Words | None:
    """A text column of few distinct values as :class:`Words`; None when most values differ
    (run ids, reasons): those are read as a list, as before."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    words = encoded.dictionary.to_pylist()
    if len(words) * 4 > len(column):
        return None
    at = encoded.indices
    # The indices' own buffer (a null's slot holds any value: it is set apart below).
    width = at.type.bit_width // 8
    index = np.frombuffer(
        at.buffers()[1], dtype=f"i{width}", count=len(at), offset=at.offset * width
    )
    if at.null_count:
        words.append(None)  # a null: the last word
        index = np.where(_valid(at), index, len(words) - 1)
    return Words(words, index)


def _is_text(kind: Any) -> bool:
    """Whether an Arrow type holds texts, dictionary-encoded or not."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind))


def few_words(column: Any) -> Words | None:
    """A text column of few distinct values as :class:`Words`; None for any other column."""
    if _is_text(column.type) and len(column) >= _SHARED_FROM:
        return _shared_strings(column)
    return None


def compact(column: Any) -> list[Any] | Words:
    """A column as a reader keeps it: texts of few distinct values as :class:`Words`, any
    other column as Python values (null: None)."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(column.type):  # intervals: as tuples, as JSON's read
        return [None if v is None else tuple(v) for v in column.to_pylist()]
    words = few_words(column)
    return list(column.to_pylist()) if words is None else words


def _pylist(column: Any) -> list[Any]:
    """A column as Python values (null: None).

    Arrow's to_pylist, not to_numpy: as fast here, and to_numpy of a column with
    nulls imports pandas (55 MB of the report's memory, for nothing)."""
    kept = compact(column)
    return kept.values() if isinstance(kept, Words) else kept


def _index_array(indices: Sequence[int]) -> Any:
    """Row numbers as an Arrow array, built from its buffer: pyarrow turning a list (or a
    numpy array) into one imports pandas, to check whether it is a pandas object."""
    import numpy as np
    import pyarrow as pa

    at = np.asarray(indices, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(at), [None, pa.py_buffer(at)])


def _floats_of(column: Any) -> FloatArray:
    """A number column as floats, null as NaN (without a Python float per value)."""
    import numpy as np
    import pyarrow as pa

    kind = column.type
    if pa.types.is_null(kind):
        return np.full(len(column), np.nan)
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)) or kind.bit_width < 8:
        return float_array(column.to_pylist())
    # From the buffers: even a zero-copy to_numpy imports pandas (see _index_array).
    numpy_type = f"{'f' if pa.types.is_floating(kind) else 'i' if pa.types.is_signed_integer(kind) else 'u'}{kind.bit_width // 8}"
    values = np.frombuffer(
        column.buffers()[1],
        dtype=numpy_type,
        count=len(column),
        offset=column.offset * (kind.bit_width // 8),
    )
    if not column.null_count:
        return values if values.dtype == np.float64 else values.astype(np.float64)
    floats = values.astype(np.float64)  # a copy, whatever the type
    floats[~_valid(column)] = np.nan
    return floats


def _valid(column: Any) -> npt.NDArray[np.bool_]:
    """Which rows of an Arrow array hold a value (its validity bitmap, unpacked)."""
    import numpy as np

    bits = np.unpackbits(np.frombuffer(column.buffers()[0], dtype=np.uint8), bitorder="little")
    valid: npt.NDArray[np.bool_] = bits[column.offset : column.offset + len(column)].astype(bool)
    return valid
