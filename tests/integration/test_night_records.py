"""What belongs to a night: the manifest lists its runs, the history holds each run once
(issue 10, items 11 and 13).

The run table, ``compare``, ``baseline --from`` and ``load_records`` read the
runs the manifest lists and no other file in the directory. A history entry
holds only runs no earlier entry of the same results directory holds, so a
resumed night is never counted twice, and the report counts a run once even
in histories written before.
"""

from __future__ import annotations

import json
from pathlib import Path

from baseline_agents import evalrunner as cli
from baseline_agents import verdict_table
from fake_endpoint import FakeEndpoint
from night_process import evalrunner, planned, respond, suite_file

from evalrunner.baseline._file import load_baseline
from evalrunner.history._store import append, load_history, read_entries
from evalrunner.live._results import ResultsDir, load_records
from evalrunner.report._select import select


def test_only_the_runs_the_manifest_lists_belong_to_the_night(tmp_path: Path) -> None:
    suite_file(tmp_path)
    out = tmp_path / "out"
    with FakeEndpoint(responder=respond) as ep:
        night = evalrunner(
            ep, tmp_path, "--suite", "resumable", "--out", str(out), "--scenario", "capital",
            "--runs", "3", "--no-history", "--no-compare",
        )  # fmt: skip
        assert night.returncode == 0, night.stderr[-2000:]
        # A run file the night did not plan: what `--resume --runs 5` left behind before.
        runs = out / "runs" / "capital" / "openai_fake"
        doc = json.loads((runs / "0.json").read_text())
        doc["record"].update(run_id="capital/openai_fake/4", index=4)
        (runs / "4.json").write_text(json.dumps(doc))

        results = ResultsDir(out)
        assert sorted(results.read_manifest().run_ids or []) == sorted(planned(("capital",), 3))
        assert {r.run_id for r in results.records()} == planned(("capital",), 3)
        assert len(load_records(out)) == 3
        compared = cli(ep, "compare", str(out), str(out), "--all-metrics")
        assert compared.exit_code == 0, compared.output
        rows = verdict_table(compared.stdout)
        assert rows and all(r["A (N)"].endswith("(3)") and r["B (N)"].endswith("(3)") for r in rows)
        built = cli(
            ep, "baseline", "--suite", "resumable", "--suites-dir", str(tmp_path),
            "--from", str(out), "--baselines", str(tmp_path / "baselines"),
        )  # fmt: skip
        assert built.exit_code == 0, built.output
    baseline = load_baseline(tmp_path / "baselines" / "resumable" / "capital--openai_fake.json")
    assert sorted(r.index for r in baseline.records) == [0, 1, 2]


def test_a_history_entry_holds_each_run_once(tmp_path: Path) -> None:
    suite_file(tmp_path)
    out, history = tmp_path / "out", tmp_path / "history"
    night = ("--suite", "resumable", "--out", str(out), "--history", str(history))
    with FakeEndpoint(responder=respond) as ep:
        first = evalrunner(ep, tmp_path, *night, "--scenario", "capital", "--runs", "2")
        assert first.returncode == 0, first.stderr[-2000:]
        again = evalrunner(ep, tmp_path, *night, "--resume")
        assert again.returncode == 0, again.stderr[-2000:]
    assert (
        "history: every run of this night is in the history already; nothing appended"
        in again.stderr
    )
    entries = read_entries(str(history))
    ids = [(e.manifest.started_at, r.run_id) for e in entries for r in e.records]
    assert len(ids) == len(set(ids)) == 2  # the finished night added nothing, repeated nothing
    assert ResultsDir(out).read_manifest().history_run_ids == sorted(planned(("capital",), 2))


def test_the_report_counts_a_run_once_across_entries(tmp_path: Path) -> None:
    # A history written before: a resumed night's second entry repeating the first's runs.
    suite_file(tmp_path)
    history = tmp_path / "history"
    with FakeEndpoint(responder=respond) as ep:
        night = evalrunner(
            ep, tmp_path, "--suite", "resumable", "--out", str(tmp_path / "out"),
            "--runs", "2", "--history", str(history), "--no-compare",
        )  # fmt: skip
        assert night.returncode == 0, night.stderr[-2000:]
    [entry] = read_entries(str(history))
    append(entry.model_copy(update={"created_at": "2999-01-01T00:00:00Z"}), str(history))
    [suite] = select(load_history(str(history)))
    counted = [r.run_id for n in suite.nights for r in n.records]
    assert sorted(counted) == sorted(r.run_id for r in entry.records)
    assert len(load_history(str(history)).runs) == len(entry.records)
