"""Every file one release writes and another may read changes its format number when its
shape changes, and CHANGELOG.md says so.

A shared history, baselines and goldens are read by every machine of a team, and not
every machine upgrades on the same day. The readers refuse fields they do not know
(``extra="forbid"``, to catch a typo in a hand-edited file), so a field added without a
new number made an older release fail on a newer night with "unreadable history file
... move it aside" (a review, after the evidence gained ``last_failed``). With a new
number the older release says the file is newer and to upgrade, and leaves it out.

The shapes below are taken from the models' fields (names, types, required or not,
extra fields allowed or not), not from pydantic's JSON schema, whose wording may change
between pydantic releases. A history file's tables (records, verdicts, ...) are columns
that an older reader reads by name and whose new columns it ignores, so only the rest of
an entry (its head) counts for the history.
"""

from __future__ import annotations

import enum
import hashlib
import re
import types
import typing
from typing import Any

import pytest
from paths import REPO
from pydantic import BaseModel

from evalrunner.baseline._file import BASELINE_FORMAT_VERSION, Baseline
from evalrunner.frozen._golden import GOLDEN_FORMAT_VERSION, Golden
from evalrunner.frozen._script import SCRIPT_FORMAT_VERSION, Script
from evalrunner.history._columnar import COLUMNAR_FORMAT_VERSION, table_fields
from evalrunner.history._entry import HistoryEntry
from evalrunner.live._results import MANIFEST_FORMAT_VERSION, RUN_FORMAT_VERSION, Manifest
from evalrunner.proxy._recording import RECORDING_FORMAT_VERSION, Recording
from evalrunner.stats._evidence_state import EVIDENCE_FORMAT_VERSION, EvidenceState
from evalrunner.suite._record import RunRecord

# name in CHANGELOG.md, its number now, the model, fields left out, the shape's hash
FORMATS: list[tuple[str, int, type[BaseModel], frozenset[str], str]] = [
    (
        "history",
        COLUMNAR_FORMAT_VERSION,
        HistoryEntry,
        frozenset(table_fields(HistoryEntry)),
        "b2849c00d8783f81",
    ),
    ("baseline", BASELINE_FORMAT_VERSION, Baseline, frozenset(), "16a6b7defff4def3"),
    ("evidence", EVIDENCE_FORMAT_VERSION, EvidenceState, frozenset(), "b344d3c6a08a6cdd"),
    ("golden", GOLDEN_FORMAT_VERSION, Golden, frozenset(), "14baa9b579e93cf4"),
    ("recording", SCRIPT_FORMAT_VERSION, Script, frozenset(), "5a247de4dd0d9a8c"),
    ("proxy recording", RECORDING_FORMAT_VERSION, Recording, frozenset(), "c20bf4e8da02b262"),
    ("manifest", MANIFEST_FORMAT_VERSION, Manifest, frozenset(), "379493673d67c32b"),
    ("run file", RUN_FORMAT_VERSION, RunRecord, frozenset(), "3898d2a0aea77048"),
]


def _type(annotation: Any, models: dict[str, str]) -> str:
    """A field's type as text; a model's fields are described once, under its name."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        _describe(annotation, models)
        return annotation.__name__
    if isinstance(annotation, type) and issubclass(annotation, enum.StrEnum):
        # Written as its members' strings: in a file it is the Literal of them.
        return f"Literal{sorted(repr(m.value) for m in annotation)}"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return f"{annotation.__name__}{sorted(m.value for m in annotation)}"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return f"Literal{sorted(map(repr, typing.get_args(annotation)))}"
    if origin is typing.Annotated:
        return _type(typing.get_args(annotation)[0], models)
    if origin in (typing.Union, types.UnionType):
        return "|".join(sorted(_type(a, models) for a in typing.get_args(annotation)))
    if origin is not None:
        args = ",".join(_type(a, models) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', repr(origin))}[{args}]"
    return getattr(annotation, "__name__", repr(annotation))


def _describe(
    model: type[BaseModel], models: dict[str, str], leave_out: frozenset[str] = frozenset()
) -> None:
    if model.__name__ in models:
        return
    models[model.__name__] = ""  # placeholder: a model may refer to itself
    fields = [
        f"{name}:{_type(info.annotation, models)}:{'required' if info.is_required() else 'optional'}"
        + (f":alias={info.alias}" if info.alias else "")
        for name, info in sorted(model.model_fields.items())
        if name not in leave_out
    ]
    models[model.__name__] = f"extra={model.model_config.get('extra')};" + ";".join(fields)


def shape(model: type[BaseModel], leave_out: frozenset[str] = frozenset()) -> str:
    """A hash of what a reader of ``model`` accepts."""
    models: dict[str, str] = {}
    _describe(model, models, leave_out)
    text = "\n".join(f"{name}={models[name]}" for name in sorted(models))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("name", "version", "model", "leave_out", "recorded"), FORMATS, ids=[f[0] for f in FORMATS]
)
def test_a_files_shape_changes_only_with_its_format_number(
    name: str, version: int, model: type[BaseModel], leave_out: frozenset[str], recorded: str
) -> None:
    assert shape(model, leave_out) == recorded, (
        f"what a {name} file holds ({model.__name__}) changed: give it a new format number "
        f"(now {version}), keep reading the old one, say so in CHANGELOG.md, and record "
        f"the new shape here: {shape(model, leave_out)!r}"
    )


def test_the_changelog_names_every_format_number_this_release_writes() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    for name, version, *_ in FORMATS:
        assert re.search(rf"\| {re.escape(name)} \| {version} \|", text), (
            f"CHANGELOG.md's table of file formats lacks '| {name} | {version} |'"
        )


def test_the_changelog_heads_with_this_release() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert version is not None
    first = re.search(r"^## (\d+\.\d+\S*)", text, re.M)
    assert first is not None and first.group(1) == version.group(1), (
        "CHANGELOG.md's first section is not pyproject.toml's version"
    )
