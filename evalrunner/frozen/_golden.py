"""Golden files: the committed, reviewable normalised trajectory of a frozen run, and where they live.

- A pytest test's golden: ``__goldens__/<test module>/<test>.json`` beside the
  test module (``<test>-<name>.json`` for a named call).
- A suite scenario's golden: ``goldens/<suite>/<scenario>.json`` beside the
  suite file.
- The recorded model responses: ``<golden stem>.llm.json`` next to the golden.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner._jsonio import load_model, write_json
from evalrunner.core._shape import Shape

GOLDEN_FORMAT_VERSION = 1


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
        return load_model(
            path,
            cls,
            what="golden",
            version=GOLDEN_FORMAT_VERSION,
            fix="regenerate it with --golden-update",
        )

    def save(self, path: Path) -> None:
        write_json(path, self.model_dump(mode="json"))


GOLDEN_DIR = "__goldens__"


def module_golden_dir(module: Path) -> Path:
    """Where the goldens of a test module's tests live: ``__goldens__/<module>/`` beside it."""
    return module.parent / GOLDEN_DIR / module.stem


def golden_path_for_test(module: Path, test: str) -> Path:
    """A test's golden; ``test`` is its file-name-safe name."""
    return module_golden_dir(module) / f"{test}.json"


def golden_path_for(suite_file: Path, suite: str, scenario: str) -> Path:
    """Where a suite scenario's golden lives: ``suites/goldens/<suite>/<scenario>.json``."""
    return suite_file.parent / "goldens" / suite / f"{scenario}.json"


def script_path_for(golden: Path) -> Path:
    """`foo.json` -> `foo.llm.json`, next to the golden."""
    return golden.with_name(golden.stem + ".llm.json")


def is_script(path: Path) -> bool:
    """A recording (``*.llm.json``, the capture proxy's ``*.proxy.json``, a judge's
    ``*.judge.json``), not a golden."""
    return path.name.endswith((".llm.json", ".proxy.json", ".judge.json"))
