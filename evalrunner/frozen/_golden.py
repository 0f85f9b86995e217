"""Golden files: the committed, reviewable normalised trajectory of a frozen run, and where they live.

- A pytest test's golden: ``__goldens__/<test module>/<test>.json`` beside the
  test module (``<test>-<name>.json`` for a named call).
- A suite scenario's golden: ``goldens/<suite>/<scenario>.json`` beside the
  suite file.
- The recorded model responses: ``<golden stem>.llm.json`` next to the golden.
"""

from __future__ import annotations

import functools
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner._jsonio import load_model, write_json
from evalrunner.core._shape import Shape, shape
from evalrunner.errors import FileFormatError
from evalrunner.frozen import GOLDEN_DIR, SUITE_GOLDENS

GOLDEN_FORMAT_VERSION = 1
REDO = "regenerate it with --golden-update"


class Golden(BaseModel):
    """A golden file. The shape is stored next to the trajectory so a reviewer
    sees the behavioural summary change at the top of the diff."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(
        default=GOLDEN_FORMAT_VERSION, description="Golden file format version."
    )
    schema_version: str = Field(
        description="ATIF schema_version the trajectory was captured under."
    )
    shape: Shape = Field(description="Behavioural summary of the trajectory.")
    trajectory: dict[str, Any] = Field(description="The normalised ATIF trajectory.")

    @classmethod
    def load(cls, path: Path) -> Golden:
        golden = load_model(path, cls, what="golden", version=GOLDEN_FORMAT_VERSION, fix=REDO)
        try:
            golden.behaviour  # noqa: B018  (what every comparison reads of it, shaped once)
        except (AttributeError, TypeError, KeyError, ValueError):
            _malformed(golden.trajectory, path)
            raise  # a valid trajectory we cannot shape: our bug, with its traceback
        _summary_matches(golden, path)
        return golden

    @functools.cached_property
    def behaviour(self) -> Shape:
        """The shape of the trajectory itself (not the stored ``shape``, which a hand edit
        could make disagree with it)."""
        return shape(self.trajectory)

    def save(self, path: Path) -> None:
        write_json(path, self.model_dump(mode="json"))


def _summary_matches(golden: Golden, path: Path) -> None:
    """Refuse a stored shape that disagrees with the trajectory (FileFormatError).

    Comparisons read the trajectory, so a hand edit or a bad merge of ``shape`` would
    otherwise pass, and show reviewers a summary the golden does not hold. Only the
    fields the file states (an older golden may lack newer ones); not the content hash,
    whose recipe may change between releases while the behaviour does not.
    """
    actual = golden.behaviour.model_dump(mode="json")
    stored = golden.shape.model_dump(mode="json")
    for name in sorted(golden.shape.model_fields_set - {"content_hash"}):
        if stored[name] != actual[name]:
            # A trajectory edited out of ATIF (a step's source "robot") shapes differently
            # too: name that first, the field to fix, not the summary it upset.
            _malformed(golden.trajectory, path)
            raise FileFormatError(
                f"{path}: shape.{name} is {stored[name]!r} but the golden's trajectory gives "
                f"{actual[name]!r} (the shape summarises the trajectory: an edit or a merge "
                f"changed one without the other); {REDO}"
            )


def _malformed(trajectory: dict[str, Any], path: Path) -> None:
    """Say where an edited golden's trajectory stops being ATIF (FileFormatError), if it does.

    Only on the way to a failure: the ATIF models cost more to import than a PR check
    should pay for every golden that reads fine.
    """
    from evalrunner.core._atif import validate
    from evalrunner.errors import TrajectoryError

    try:
        validate(trajectory, f"{path}: trajectory")
    except TrajectoryError as exc:
        raise FileFormatError(f"{exc}; {REDO}") from None


def module_golden_dir(module: Path) -> Path:
    """Where the goldens of a test module's tests live: ``__goldens__/<module>/`` beside it."""
    return module.parent / GOLDEN_DIR / module.stem


def golden_path_for_test(module: Path, test: str) -> Path:
    """A test's golden; ``test`` is its file-name-safe name."""
    return module_golden_dir(module) / f"{test}.json"


def moved_hint(recording: Path) -> str:
    """For a test whose recording is missing: where its module's goldens were before the
    module was renamed (a folder of ``__goldens__`` whose module is gone, holding this file
    name), as the ``git mv`` that keeps them; "" when there is none. Re-recording, the
    only fix offered before, needs the live model and changes every recorded answer."""
    here = recording.parent
    if here.parent.name != GOLDEN_DIR:
        return ""
    for old in sorted(here.parent.glob(f"*/{recording.name}")):
        folder = old.parent
        if folder == here or (here.parent.parent / f"{folder.name}.py").exists():
            continue
        if not here.exists():
            move = shlex.join(["git", "mv", str(folder), str(here)])
            return f"\nor, if the module was renamed from {folder.name}.py: {move}"
        stem = recording.name.removesuffix(".llm.json").removesuffix(".proxy.json")
        kept = (folder / f"{stem}{suffix}" for suffix in (".json", *RECORDINGS))
        files = [str(p) for p in kept if p.exists()]
        move = shlex.join(["git", "mv", *files, f"{here}/"])
        return f"\nor, if the test came from {folder.name}.py: {move}"
    return ""


def golden_path_for(suite_file: Path, suite: str, scenario: str) -> Path:
    """Where a suite scenario's golden lives: ``suites/goldens/<suite>/<scenario>.json``."""
    return suite_file.parent / SUITE_GOLDENS / suite / f"{scenario}.json"


def script_path_for(golden: Path) -> Path:
    """`foo.json` -> `foo.llm.json`, next to the golden."""
    return golden.with_name(golden.stem + ".llm.json")


def is_script(path: Path) -> bool:
    """A recording (``*.llm.json``, the capture proxy's ``*.proxy.json``, a judge's
    ``*.judge.json``), not a golden."""
    return path.name.endswith(RECORDINGS)


RECORDINGS = (".llm.json", ".proxy.json", ".judge.json")
"""What a golden's recordings end in, beside it: in process, through the capture proxy, a
judge's grades."""


def with_recordings(golden: Path) -> str:
    """The golden, and the recordings beside it that belong to it (for a list of files that
    no test used: whoever deletes the golden deletes these with it)."""
    found = [
        golden.stem + end for end in RECORDINGS if golden.with_name(golden.stem + end).exists()
    ]
    return f"{golden} (with {', '.join(found)})" if found else str(golden)
