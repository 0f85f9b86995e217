"""A fixture for tests of code that must write nothing: it runs in an empty directory.

Import it into a test module (``from workdir import writes_nothing  # noqa: F401``);
being autouse, it then applies to every test there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run the test in an empty working directory and check it stays empty."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    yield
    assert list(work.iterdir()) == []
