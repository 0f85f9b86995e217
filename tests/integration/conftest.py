"""Fixtures the journeys share."""

from __future__ import annotations

from pathlib import Path

import pytest
from clean_room import build_wheel_site


@pytest.fixture(scope="session")
def wheel_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, unpacked: what ``pip install <wheel>`` puts in site-packages."""
    return build_wheel_site(tmp_path_factory.mktemp("wheel"))
