"""A suite whose scenario ids end in credential words runs, writes its history, compares.

``reset_password`` and ``rotate_token`` are ordinary scenario names, and they key our
own data (the manifest's fingerprints, the history's cells). Redaction took them for
secrets' names and replaced what they held with "[REDACTED]": the night ended exit 2
with no history, and `compare`, `baseline --from` and `--resume` refused its directory
(issue 53, row 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from baseline_agents import GOOD, World, evalrunner, make_suite
from fake_endpoint import FakeEndpoint

from evalrunner._redact import is_secret_key

SUITE = "accounts"
TAGS = ("reset_password", "rotate_token")


def test_a_suite_whose_ids_read_like_secrets_runs_keeps_its_history_and_compares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert all(is_secret_key(tag) for tag in TAGS)
    monkeypatch.chdir(tmp_path)  # relative defaults land in the temp project
    make_suite(tmp_path / "suites", SUITE, TAGS)
    world = World(dict.fromkeys(TAGS, GOOD), seed=1)
    common = ("--suite", SUITE, "--suites-dir", str(tmp_path / "suites"), "--runs", "4")
    places = ("--baselines", str(tmp_path / "baselines"), "--history", str(tmp_path / "hist"))
    with FakeEndpoint(responder=world) as ep:
        first = evalrunner(ep, "run", *common, *places, "--out", str(tmp_path / "n1"))
        assert first.exit_code == 0, first.output
        manifest = json.loads((tmp_path / "n1" / "manifest.json").read_text())
        assert set(manifest["scenarios"]) == set(TAGS)
        assert "[REDACTED]" not in json.dumps(manifest)
        accepted = evalrunner(
            ep, "baseline", *common[:4], "--baselines", str(tmp_path / "baselines"),
            "--from", str(tmp_path / "n1"),
        )  # fmt: skip
        assert accepted.exit_code == 0, accepted.output
        world.reseed(2)
        second = evalrunner(ep, "run", *common, *places, "--out", str(tmp_path / "n2"))
        assert second.exit_code == 0, second.output
        assert "Compared with baselines" in second.stdout
        compared = evalrunner(ep, "compare", str(tmp_path / "n1"), str(tmp_path / "n2"))
        assert compared.exit_code == 0, compared.output
    history = [p for p in (tmp_path / "hist").rglob("*") if p.is_file()]
    assert history, "the nights were appended to the history"
    for run_file in (tmp_path / "n2").rglob("*.json"):
        assert "[REDACTED]" not in run_file.read_text(), run_file
