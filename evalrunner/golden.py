"""Golden files: the committed, reviewable normalised trajectory of a frozen run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner.errors import FileFormatError
from evalrunner.jsonio import read_json, write_json
from evalrunner.shape import Shape

GOLDEN_FORMAT_VERSION = 1


class Golden(BaseModel):
    """A golden file. The shape is stored next to the trajectory so a reviewer
    sees the behavioural summary change at the top of the diff."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = Field(default=GOLDEN_FORMAT_VERSION, description="Golden file format version.")
    schema_version: str = Field(description="ATIF schema_version the trajectory was captured under.")
    shape: Shape = Field(description="Behavioural summary of the trajectory.")
    trajectory: dict[str, Any] = Field(description="The normalised ATIF trajectory.")

    @classmethod
    def load(cls, path: Path) -> Golden:
        data = read_json(path, "golden")
        if not isinstance(data, dict):
            raise FileFormatError(f"{path}: expected a JSON object; regenerate it with --golden-update")
        version = data.get("format_version")
        if version != GOLDEN_FORMAT_VERSION:
            raise FileFormatError(
                f"{path}: golden format_version {version!r} is not supported (expected "
                f"{GOLDEN_FORMAT_VERSION}); regenerate it with --golden-update"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise FileFormatError(f"{path}: {where}: {err['msg']}; regenerate it with --golden-update") from None

    def save(self, path: Path) -> None:
        write_json(path, self.model_dump(mode="json"))
