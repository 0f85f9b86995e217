"""Shared by the frozen-mode tests: a golden with one recorded answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents_for_tests import ask

from evalrunner.core._response import ResponseRecord
from evalrunner.frozen._golden import script_path_for
from evalrunner.frozen._run import run_frozen
from evalrunner.frozen._script import responses_from


@pytest.fixture
def one_answer_golden(tmp_path: Path) -> Path:
    """A golden (and its recording) of ``ask``: one model call answered "hello"."""
    golden = tmp_path / "goldens" / "g.json"
    golden.parent.mkdir()
    responses_from([ResponseRecord(content="hello", model="fake")]).save(script_path_for(golden))
    outcome = run_frozen(ask, None, golden_path=golden, mode="update")
    assert outcome.ok, outcome.message
    return golden
