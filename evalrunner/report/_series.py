"""The trend charts' data: each charted metric of each scenario x model over a suite's
nights, read night by night into flat arrays of what the charts draw.

A year of an organisation's nights (800 cells, 7 charted metrics each) is two million
charted points. Each is kept as five numbers (estimate, interval, baseline, margin) and
three small codes (its night, verdict and kind), computed over each night's rows in
numpy, and the points ordered by series: the texts and row numbers as Python lists were
500 MB and a third of the report's CPU. A flagged point's tooltip is written as its
night is read.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evalrunner.report._charts import EFFECT_KINDS, Series, tip_text
from evalrunner.report._select import SelectedNight
from evalrunner.report._verdicts import FLAGGED
from evalrunner.suite._metrics import EFFECT_LABELS

if TYPE_CHECKING:
    import numpy.typing as npt

    from evalrunner.history._values import Words

    IntArray = npt.NDArray[np.integer[Any]]
    FloatArray = npt.NDArray[np.float64]

Key = tuple[str, str, str]
"""(scenario, model, metric): one series."""

_VALUES = ("est", "low", "high", "base", "margin")
_INTERVALS = ("effect_ci", "night_ci")
_NUMBERS = ("effect", "night_estimate", "baseline_estimate", "margin")
"""The numbers read of every charted row (q only of a flagged one, for its tooltip)."""
_TIP_NUMBERS = ("baseline_estimate", "night_estimate", "effect", "q", "q_improvement")


class _Codes:
    """Words of every night numbered once: a night's codes turned into the same ids."""

    def __init__(self, known: Sequence[str] = (), *, fixed: bool = False) -> None:
        self.ids: dict[str, int] = {word: i for i, word in enumerate(dict.fromkeys(known))}
        self.fixed = fixed
        """Only the words given are numbered; any other reads as ``len(ids)``."""

    def of(self, words: Words) -> IntArray:
        """The id of each row of ``words``."""
        if self.fixed:
            lookup = [self.ids.get(w, len(self.ids)) for w in words.words]
        else:
            lookup = [self.ids.setdefault(w, len(self.ids)) for w in words.words]
        ids: IntArray = (
            np.array(lookup, dtype=np.int64)[words.codes] if lookup else np.zeros(0, dtype=np.int64)
        )
        return ids

    def words(self) -> list[str]:
        return list(self.ids)


@dataclass
class _Flat:
    """Every charted point of a suite, nights in order: its night, the five values as its
    own kind reads them, verdict and kind (its series is :class:`Gathered`'s order)."""

    night: IntArray
    values: dict[str, FloatArray]
    effect: npt.NDArray[np.bool_]
    verdict: IntArray
    kind: IntArray

    @classmethod
    def empty(cls, size: int, nights: int) -> _Flat:
        """Room for ``size`` points: allocated once, filled night by night (joining
        nights' parts held every point twice at the peak)."""
        return cls(
            night=np.zeros(size, dtype=np.min_scalar_type(nights)),
            values={name: np.zeros(size) for name in _VALUES},
            effect=np.zeros(size, dtype=np.bool_),
            verdict=np.zeros(size, dtype=np.int16),
            kind=np.zeros(size, dtype=np.int16),
        )


@dataclass
class Gathered:
    """Every charted series of a suite, flat; :meth:`take` gives one as its chart reads it."""

    index: _Index
    nights: Sequence[SelectedNight]
    flat: _Flat
    series: InitVar[IntArray]
    """Each point's series: read into the order of points by series, then let go."""
    tips: dict[int, str]
    """Tooltips of the flagged points, by flat position."""
    _order: IntArray = field(init=False)
    _starts: IntArray = field(init=False)
    _flagged: npt.NDArray[np.bool_] = field(init=False)
    _objects: dict[str, Any] = field(init=False)
    _stamps: FloatArray = field(init=False)

    def __post_init__(self, series: IntArray) -> None:
        self._order = np.argsort(series, kind="stable").astype(np.int32)
        counts = np.bincount(series, minlength=len(self.index.keys))
        self._starts = np.concatenate([[0], np.cumsum(counts)])
        self._flagged = np.zeros(len(series), dtype=np.bool_)
        self._flagged[list(self.tips)] = True
        self._stamps = np.array([night.stamp for night in self.nights], dtype=float)
        # Picked by code, a series at a time, in numpy: not a Python lookup per point.
        self._objects = {
            name: _objects(values)
            for name, values in (("nights", self.nights), ("verdicts", self.index.verdicts.words()))
        }

    def take(self, key: Key) -> Series | None:
        """The series of ``key``, oldest first (None: no night has a result of it)."""
        i = self.index.keys.get(key)
        if i is None or self._starts[i] == self._starts[i + 1]:
            return None
        at = self._order[self._starts[i] : self._starts[i + 1]]
        kind = self.index.kinds.words()[int(self.flat.kind[at[-1]])]
        values = {name: self.flat.values[name][at] for name in _VALUES}
        other = np.flatnonzero(self.flat.effect[at] != (kind in EFFECT_KINDS))
        for j in other.tolist():  # a series whose kind changed in the window (rare): read again
            night = int(self.flat.night[at[j]])
            _as_kind(values, j, self.nights[night], self._row(i, night, at[:j]), kind)
        flagged = np.flatnonzero(self._flagged[at])
        return Series(
            nights=self._objects["nights"][self.flat.night[at]].tolist(),
            stamps=self._stamps[self.flat.night[at]],
            verdicts=self._objects["verdicts"][self.flat.verdict[at]].tolist(),
            kind=kind,
            tips={int(j): self.tips[int(at[j])] for j in flagged},
            **values,
        )

    def _row(self, i: int, night: int, before: IntArray) -> int:
        """The row among ``night``'s results of series ``i``'s point after ``before``."""
        series, rows = self.index.located(self.nights[night])
        earlier = int(np.count_nonzero(self.flat.night[before] == night))
        return int(rows[series == i][earlier])


def _objects(values: Sequence[Any]) -> Any:
    """``values`` as a numpy array of objects (one per item, whatever the item is)."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _as_kind(
    values: dict[str, FloatArray], j: int, night: SelectedNight, row: int, kind: str
) -> None:
    """Point ``j`` of a series read as ``kind`` reads it (its own kind read otherwise)."""
    [result] = night.result_rows([row])
    effect = kind in EFFECT_KINDS
    ci = (result.effect_ci if effect else result.night_ci) or (np.nan, np.nan)
    est = result.effect if effect else result.night_estimate
    values["est"][j] = np.nan if est is None else est
    values["low"][j], values["high"][j] = ci
    base = 0.0 if effect else result.baseline_estimate
    values["base"][j] = np.nan if base is None else base


def gather(nights: Sequence[SelectedNight], wanted: Collection[Key]) -> Gathered:
    """The ``wanted`` series over ``nights`` (oldest first), each night's rows read once."""
    index = _Index(wanted)
    # Counted first, so the points are allocated once (their rows found again when read:
    # cheaper than holding two million row numbers meanwhile).
    size = sum(len(index.located(night)[1]) for night in nights)
    flat, every = _Flat.empty(size, len(nights)), np.zeros(size, dtype=np.int32)
    tips: dict[int, str] = {}
    start = 0
    for n, night in enumerate(nights):
        series, rows = index.located(night)
        if rows.size:
            at = slice(start, start + rows.size)
            every[at], flat.night[at] = series, n
            tips.update(index.fill(flat, at, night, rows))
            start = at.stop
    return Gathered(index, nights, flat, every, tips)


class _Index:
    """Which series each night's result rows are, and their codes."""

    def __init__(self, wanted: Collection[Key]) -> None:
        self.keys = {key: i for i, key in enumerate(dict.fromkeys(wanted))}
        self.scenarios = _Codes([k[0] for k in self.keys], fixed=True)
        self.models = _Codes([k[1] for k in self.keys], fixed=True)
        self.metrics = _Codes([k[2] for k in self.keys], fixed=True)
        shape = (len(self.scenarios.ids) + 1, len(self.models.ids) + 1, len(self.metrics.ids) + 1)
        self.table = np.full(shape, -1, dtype=np.int64)
        for (scenario, model, metric), i in self.keys.items():
            self.table[
                self.scenarios.ids[scenario], self.models.ids[model], self.metrics.ids[metric]
            ] = i
        self.verdicts = _Codes(FLAGGED)
        self.kinds = _Codes()

    def located(self, night: SelectedNight) -> tuple[IntArray, IntArray]:
        """The series of a night's charted rows, and those rows among its results."""
        if not night.result_count:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
        series = self.table[
            self.scenarios.of(night.result_words("scenario")),
            self.models.of(night.result_words("model")),
            self.metrics.of(night.result_words("metric")),
        ]
        rows = np.flatnonzero(series >= 0).astype(np.int32)
        return series[rows].astype(np.int32), rows

    def fill(self, flat: _Flat, at: slice, night: SelectedNight, rows: IntArray) -> dict[int, str]:
        """Write the night's charted ``rows`` into ``flat`` at ``at``; the tooltips of those
        flagged, by their place in ``flat``."""
        verdict = self.verdicts.of(night.result_words("verdict"))[rows]
        flagged = np.flatnonzero(verdict < len(FLAGGED))
        read = _read(night, rows, (*_NUMBERS, *(_TIP_NUMBERS if flagged.size else ())))
        kind = self.kinds.of(night.result_words("kind"))[rows]
        effect = np.isin(kind, [i for w, i in self.kinds.ids.items() if w in EFFECT_KINDS])
        flat.kind[at], flat.effect[at], flat.verdict[at] = kind, effect, verdict
        for name, values in _values(read, effect).items():
            flat.values[name][at] = values
        if not flagged.size:
            return {}
        tips = _tips(night, rows[flagged], {name: column[flagged] for name, column in read.items()})
        return {at.start + int(j): tip for j, tip in zip(flagged, tips, strict=True)}


def _read(night: SelectedNight, rows: IntArray, names: Sequence[str]) -> dict[str, FloatArray]:
    """The charted ``rows``' numbers ``names`` and intervals: each column read once, in one
    go, and the file let go (its footer is 80 columns); the intervals kept as their texts
    and only these rows' parsed."""
    night.preload("verdicts", (*names, *_INTERVALS))
    read = {name: night.result_floats(name)[rows] for name in dict.fromkeys(names)}
    read.update({name: night.result_pairs(name, rows) for name in _INTERVALS})
    return read


def _tips(night: SelectedNight, at: IntArray, read: dict[str, FloatArray]) -> list[str]:
    """The tooltips of a night's results at ``at`` (flagged points of charts), ``read``
    holding their numbers and intervals."""
    verdicts = night.result_words("verdict").take(at).values()
    labels = night.result_words("effect_label").take(at).values()
    kinds = night.result_words("kind").take(at).values()
    ci = read["effect_ci"]
    return [
        tip_text(
            night.created_at,
            verdicts[k],
            {name: float(read[name][k]) for name in _TIP_NUMBERS},
            (float(ci[k, 0]), float(ci[k, 1])),
            labels[k] or EFFECT_LABELS.get(kinds[k], "effect"),
        )
        for k in range(len(at))
    ]


def _values(read: dict[str, FloatArray], effect: npt.NDArray[np.bool_]) -> dict[str, FloatArray]:
    """Each charted row's estimate, interval, baseline and margin, as its own kind reads them:
    a count's or a path's effect against the margin, another kind's estimates."""
    effect_ci, night_ci = read["effect_ci"], read["night_ci"]
    return {
        "est": np.where(effect, read["effect"], read["night_estimate"]),
        "low": np.where(effect, effect_ci[:, 0], night_ci[:, 0]),
        "high": np.where(effect, effect_ci[:, 1], night_ci[:, 1]),
        "base": np.where(effect, 0.0, read["baseline_estimate"]),
        "margin": read["margin"],
    }
