"""End to end: baseline from one model behaviour, then nights of the same and of other behaviours.

Everything goes through the ``evalrunner`` command against the fake endpoint
(tests/fake_endpoint.py), whose responder plays a model (tests/baseline_agents.py):

* baseline: every scenario looks up the capital once and answers "Paris"
  (one answer in twenty is wrong; ``steady`` never errs, ``hopeless`` always
  answers wrongly), 30 runs each;
* a changed night (20 runs): in ``capital`` the model looks up twice and answers
  wrongly 60 % of the time; in ``format`` half its tool calls carry broken JSON
  arguments (the runs are skipped); ``steady`` and ``hopeless`` are unchanged;
* a night of the same behaviour with fresh random draws.

Draw counts are seeded, so the verdicts are the same on every run of the tests.
Every file goes under tmp_path (baselines, history, results): the repository's
own baselines/ and reports/ are never touched (conftest.py checks the worktree).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from baseline_agents import (
    DOUBLE_LOOKUP_WRONG,
    GOOD,
    HOPELESS,
    MALFORMED,
    PERFECT,
    World,
    evalrunner,
    flagged,
    make_suite,
    outage_night,
    verdict_table,
)
from click.testing import Result
from fake_endpoint import FakeEndpoint

from evalrunner.history._store import read_entries
from evalrunner.live._results import ResultsDir
from evalrunner.stats._metric_result import FAILING

SUITE = "behaviour"
TAGS = ("capital", "format", "hopeless", "steady")
BASELINE = {"capital": GOOD, "format": GOOD, "hopeless": HOPELESS, "steady": PERFECT}
CHANGED = {**BASELINE, "capital": DOUBLE_LOOKUP_WRONG, "format": MALFORMED}


@dataclass
class Lab:
    ep: FakeEndpoint
    world: World
    root: Path

    @property
    def baselines(self) -> Path:
        return self.root / "baselines"

    @property
    def history(self) -> Path:
        return self.root / "history"

    def run(self, out: str, *args: str) -> Result:
        return evalrunner(
            self.ep,
            "run",
            "--suite",
            SUITE,
            "--suites-dir",
            str(self.root),
            "--out",
            str(self.root / out),
            *args,
        )

    def night(self, out: str, seed: int, *args: str, **behaviours: object) -> Result:
        """A compared night: baseline behaviours unless named, fresh draws from ``seed``."""
        self.world.set(seed, **{**BASELINE, **behaviours})  # type: ignore[arg-type]
        return self.run(
            out, "--baselines", str(self.baselines), "--history", str(self.history), *args
        )

    def baseline_bytes(self) -> dict[Path, bytes]:
        return {p: p.read_bytes() for p in sorted(self.baselines.rglob("*.json"))}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("e2e")
    # One accepted night gates here (the default asks for 3; test_escalation_e2e.py covers
    # a baseline too young to gate): these tests are about what a gating comparison says.
    # Latency on a loopback fake endpoint measures the machine's load, not the model: a
    # wide margin keeps it from deciding escalation or adaptive stops in these tests.
    make_suite(
        root, SUITE, TAGS, tolerance={"min_baseline_nights": 1, "margins": {"latency_s": 20.0}}
    )
    world = World(dict(BASELINE), seed=1)
    # A fixed endpoint latency keeps run latency mostly the endpoint's, not the machine's load.
    with FakeEndpoint(responder=world, latency=0.02) as ep, pytest.MonkeyPatch.context() as mp:
        mp.chdir(
            root
        )  # relative defaults (results/, reports/, baselines/) would land here, not in the repo
        lab = Lab(ep, world, root)
        base = lab.run("base", "--runs", "30", "--concurrency", "8", "--no-history", "--no-compare")
        assert base.exit_code == 0, base.output
        built = evalrunner(
            ep,
            "baseline",
            "--suite",
            SUITE,
            "--suites-dir",
            str(root),
            "--from",
            str(root / "base"),
            "--baselines",
            str(lab.baselines),
        )
        assert built.exit_code == 0, built.output
        assert built.stdout.splitlines() == [
            f"wrote {lab.baselines / SUITE / f'{t}--openai_fake.json'}" for t in TAGS
        ]
        yield lab


@pytest.fixture(scope="module")
def changed(lab: Lab) -> Result:
    before = lab.baseline_bytes()
    result = lab.night("changed", 2, "--runs", "20", **CHANGED)
    assert lab.baseline_bytes() == before  # comparing never rewrites a baseline
    return result


@pytest.fixture(scope="module")
def same(lab: Lab) -> Result:
    return lab.night("same", 3, "--runs", "20")


def gating(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rows if not r["metric"].endswith("(diag)")]


# ------------------------------------------------------------------ evalrunner run


def test_a_changed_night_exits_1_and_flags_the_right_metrics(lab: Lab, changed: Result) -> None:
    assert changed.exit_code == 1, changed.output
    rows = verdict_table(changed.stdout)
    assert {r["scenario"] for r in rows} == set(TAGS)
    assert flagged(gating(rows)) == {
        ("capital", "success_rate"),  # 0.97 -> 0.45
        ("capital", "tool_sequence"),  # lookup -> lookup > lookup
        ("capital", "step_count"),  # 4 -> 5 steps
        ("format", "success_rate"),  # skipped runs do not pass either
        ("format", "skip_rate"),  # 0 -> 0.35, malformed_tool_arguments
    }
    by_key = {(r["scenario"], r["metric"]): r for r in rows}
    # 30 baseline runs; a run that outlives timeout_s on a loaded machine is infra, excluded.
    assert re.fullmatch(
        r"(0\.9\d*|1) \((2[5-9]|30)\)", by_key[("capital", "success_rate")]["baseline (N)"]
    )
    # Suspicious after its 20 runs, capital was escalated (up to 3 x 20) before the verdict.
    tonight = by_key[("capital", "success_rate")]["tonight (N)"]
    assert 20 < int(tonight.split("(")[1].rstrip(")")) <= 60, tonight
    assert re.search(
        r"^escalation: capital\|openai/fake: escalating, after 20 runs ", changed.stderr, re.M
    )
    assert re.search(
        r"^escalation: made \d+ runs \(\+\d+ on the fixed plan's 80\)", changed.stderr, re.M
    )
    # The malformed runs are skipped, not failed: tool paths of the valid runs did not move.
    assert by_key[("format", "tool_sequence")]["verdict"] in ("ok", "inconclusive")
    assert all(
        r["verdict"] != "REGRESSION" for r in rows if r["scenario"] in ("steady", "hopeless")
    )
    assert re.search(r"malformed_tool_arguments x\d+", changed.stdout)  # the top skip reason
    # The night went into the history, verdicts included.
    history = f"history: {lab.history / SUITE}/"
    assert history in changed.stderr
    entries = read_entries(str(lab.history), suites=[SUITE])
    [entry] = [e for e in entries if any(r.outcome == "skipped" for r in e.records)]
    regressions = {
        (v.scenario, v.metric) for v in entry.verdicts if v.verdict in FAILING and v.gating
    }
    assert regressions == flagged(gating(rows))
    assert {k.token() for k in entry.baselines} == {f"{t}|openai/fake" for t in TAGS}


def test_resuming_a_finished_escalated_night_counts_every_run_it_held(
    lab: Lab, changed: Result
) -> None:
    # A review's finished escalated night said "resumed: 30 runs were already done" when
    # the directory held 40: the count was of the batches the plan gave again.
    held = len(ResultsDir(lab.root / "changed").records())
    assert held > 80  # 4 scenarios x 20, and escalation's runs
    resumed = lab.run("changed", "--resume", "--baselines", str(lab.baselines), "--no-history")
    assert f"resumed: {held} runs were already done" in resumed.stderr.splitlines(), resumed.stderr


def test_a_night_of_the_same_behaviour_exits_0_with_nothing_flagged(lab: Lab, same: Result) -> None:
    assert same.exit_code == 0, same.output
    rows = verdict_table(same.stdout)
    assert {r["scenario"] for r in gating(rows)} == set(TAGS)
    assert len(gating(rows)) == 20  # 5 gating metrics x 4 scenarios
    assert flagged(gating(rows)) == set()
    # Deterministic paths and step counts are confirmed equivalent, not merely "not flagged".
    assert {r["verdict"] for r in rows if r["metric"] in ("tool_sequence", "step_count")} == {"ok"}
    assert "note:" not in same.stderr  # every scenario had a usable baseline


def test_no_gate_reports_the_regression_but_exits_0(lab: Lab) -> None:
    result = lab.night(
        "nogate",
        6,
        "--runs",
        "20",
        "--scenario",
        "capital",
        "--no-gate",
        "--no-history",
        capital=DOUBLE_LOOKUP_WRONG,
    )
    assert result.exit_code == 0, result.output
    assert ("capital", "success_rate") in flagged(verdict_table(result.stdout))
    # lab.night passes --history; --no-history wins, and the night says so.
    assert f"note: --no-history: nothing is appended to --history {lab.history}" in result.stderr


# ------------------------------------------------------------------------ adaptive


def runs_of(out: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in ResultsDir(out).records():
        counts[record.scenario] = counts.get(record.scenario, 0) + 1
    return counts


def stops(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "stopped after" in line]


def test_adaptive_stops_unchanged_scenarios_early(lab: Lab) -> None:
    result = lab.night(
        "adaptive-same", 4, "--adaptive", "--max-runs", "20", "--batch", "5", "--no-history"
    )
    assert result.exit_code == 0, result.output
    # The words match the numbers: runs made, fewer than the maximum, of that maximum.
    summary = re.search(
        r"^adaptive: made (\d+) runs, (\d+) fewer than the (\d+) allowed", result.stderr, re.M
    )
    assert summary is not None, result.stderr
    counts = runs_of(lab.root / "adaptive-same")
    made, fewer, allowed = map(int, summary.groups())
    assert (made, allowed) == (sum(counts.values()), 60 * len(TAGS))  # N 20, escalation to 3N
    assert fewer == allowed - made > 0
    stopped = re.findall(
        r"^adaptive: (\w+)\|openai/fake: stopped after (\d+) of at most 60 runs",
        result.stderr,
        re.M,
    )
    assert stopped and all(counts[sc] == int(n) < 20 for sc, n in stopped)
    assert counts["steady"] < 20  # never errs: every gating metric settles early
    # Never passes: its success rate cannot drop, so it must not hold the scenario to max N.
    assert counts["hopeless"] < 20, result.stderr
    # Looks at half of N (10), then after every batch of 5: whole batches.
    assert all(n == 10 or (n >= 15 and n % 5 == 0) for n in counts.values()), counts
    rows = gating(verdict_table(result.stdout))
    assert flagged(rows) == set()
    # A stop claims only what it means (nothing suspicious yet), whatever the verdicts say.
    assert "fine" not in result.stderr
    assert all(re.search(r"nothing suspicious after 1[05] runs", line) for line in stops(result))
    # The manifest lists exactly the runs made: the table, compare and baselines read those.
    manifest = ResultsDir(lab.root / "adaptive-same").read_manifest()
    assert len(manifest.run_ids or []) == made and manifest.adaptive is not None


def test_adaptive_says_runs_is_not_the_n_of_a_scenario_with_a_baseline(lab: Lab) -> None:
    result = lab.night(
        "adaptive-runs", 6, "--adaptive", "--runs", "1", "--scenario", "steady", "--no-history"
    )
    assert result.exit_code == 0, result.output
    assert (
        "note: --adaptive: a scenario with a baseline is planned for --max-runs (default 20), "
        "may stop at half of it, and may escalate to its escalate_to times it (default 3) when "
        "a change looks likely; --runs 1 is for those without one"
    ) in result.stderr.splitlines()
    assert runs_of(lab.root / "adaptive-runs")["steady"] >= 10  # what the note says


def test_adaptive_still_flags_a_changed_scenario(lab: Lab) -> None:
    result = lab.night(
        "adaptive-changed",
        5,
        "--adaptive",
        "--max-runs",
        "20",
        "--batch",
        "5",
        "--no-history",
        capital=DOUBLE_LOOKUP_WRONG,
    )
    assert result.exit_code == 1, result.output
    assert {("capital", m) for m in ("success_rate", "tool_sequence", "step_count")} <= flagged(
        verdict_table(result.stdout)
    )
    assert (
        runs_of(lab.root / "adaptive-changed")["capital"] >= 20
    )  # a regressing scenario is never cut short
    assert "capital|openai/fake: stopped" not in result.stderr


# ------------------------------------------------------------------- evalrunner compare


def compare(lab: Lab, a: str, b: str, *args: str) -> Result:
    return evalrunner(lab.ep, "compare", str(lab.root / a), str(lab.root / b), *args)


def test_compare_two_results_dirs_of_different_behaviours_exits_1(
    lab: Lab, changed: Result
) -> None:
    result = compare(lab, "base", "changed")
    assert result.exit_code == 1, result.output
    rows = verdict_table(result.stdout)
    # The two sides are A and B, named above the table (no "baseline"/"tonight" here).
    assert {"A (N)", "B (N)"} <= set(rows[0]) and "tonight" not in result.stdout
    assert result.stdout.startswith(f"A: {lab.root / 'base'}\nB: {lab.root / 'changed'}\n")
    # Default tolerances, same tests: the same gating regressions as the nightly comparison.
    assert flagged(gating(rows)) == flagged(gating(verdict_table(changed.stdout)))
    assert {r["model"] for r in rows} == {"openai/fake"}
    # A closing line, as `run` ends with (before: the table, its notes cut, and nothing else).
    named = ", ".join(
        sorted(
            f"{r['scenario']} {r['metric']}"
            for r in gating(rows)
            if r["verdict"] in ("REGRESSION", "CHANGED")
        )
    )
    assert result.stderr.splitlines()[-1] == f"compare: flagged from A to B: {named}"
    assert compare(lab, "base", "changed", "--no-gate").exit_code == 0


def test_compare_two_results_dirs_of_the_same_behaviour_exits_0(lab: Lab, same: Result) -> None:
    result = compare(lab, "base", "same")
    assert result.exit_code == 0, result.output
    rows = verdict_table(result.stdout)
    assert len(gating(rows)) == 20
    assert flagged(gating(rows)) == set()
    last = result.stderr.splitlines()[-1]
    assert last.startswith("compare: nothing flagged from A to B"), last
    # A is a results directory, not a baseline: what settles a row is a larger A (before:
    # "more baseline nights", and `evalrunner plan`, which sizes committed baselines).
    assert "baseline nights" not in result.output and "evalrunner plan" not in result.output
    assert "a larger A first, then a larger B" in result.stdout
    assert "need a larger A before a larger B can settle them" in last


def test_compare_two_models_pairs_runs_by_scenario(lab: Lab) -> None:
    lab.world.set(7, **BASELINE)
    for out, model in (("model-a", "openai/a"), ("model-b", "openai/b")):
        result = lab.run(
            out,
            "--model",
            model,
            "--scenario",
            "capital",
            "--runs",
            "15",
            "--no-history",
            "--no-compare",
        )
        assert result.exit_code == 0, result.output
    lab.world.set(8, **CHANGED)
    result = lab.run(
        "model-c",
        "--model",
        "openai/c",
        "--scenario",
        "capital",
        "--runs",
        "15",
        "--no-history",
        "--no-compare",
    )
    assert result.exit_code == 0, result.output

    same = compare(lab, "model-a", "model-b")
    assert same.exit_code == 0, same.output
    rows = verdict_table(same.stdout)
    assert {(r["scenario"], r["model"]) for r in rows} == {("capital", "openai/a -> openai/b")}
    assert flagged(gating(rows)) == set()

    swapped = compare(lab, "model-a", "model-c")
    assert swapped.exit_code == 1, swapped.output
    rows = verdict_table(swapped.stdout)
    assert {r["model"] for r in rows} == {"openai/a -> openai/c"}
    assert {"success_rate", "tool_sequence", "step_count"} <= {m for _, m in flagged(gating(rows))}


def test_compare_with_an_outage_night_exits_3_and_says_so(lab: Lab) -> None:
    # It said "nothing flagged from A to B" and exited 0 for a B whose every run was
    # infra_error: a CI job gating on `compare main branch` passed a night that measured
    # nothing (`run` on the same night exited 3).
    outage_night(lab.root, SUITE, lab.root / "down", runs=2)
    for a, b, side in (("base", "down", "B"), ("down", "base", "A")):
        result = compare(lab, a, b)
        assert result.exit_code == 3, result.output
        lines = result.stderr.splitlines()
        assert lines[-1] == (
            f"compare: {side} is an outage night, so nothing was compared. Next: check the "
            "model endpoint, and run that night again"
        )
        assert lines[-2].startswith("outage: 8 of 8 runs ended in infra_error")
        assert result.stdout == ""  # no table of verdicts from a night that measured nothing


def test_compare_dirs_without_a_common_scenario_is_a_usage_error(lab: Lab) -> None:
    lab.world.set(9, **BASELINE)
    for out, tag in (("only-capital", "capital"), ("only-steady", "steady")):
        result = lab.run(out, "--scenario", tag, "--runs", "2", "--no-history", "--no-compare")
        assert result.exit_code == 0, result.output
    result = compare(lab, "only-capital", "only-steady")
    assert result.exit_code == 2
    assert "share no scenario" in result.output
    missing = evalrunner(
        lab.ep, "compare", str(lab.root / "base"), str(lab.root)
    )  # no manifest.json
    assert missing.exit_code == 2
    assert [line for line in missing.stderr.splitlines() if line] == [
        f"error: {lab.root / 'manifest.json'}: results manifest not found"
    ]


def test_compare_of_two_suites_is_a_usage_error_naming_both(lab: Lab, tmp_path: Path) -> None:
    other = tmp_path / "other-suite"
    shutil.copytree(lab.root / "base", other)
    manifest = json.loads((other / "manifest.json").read_text(encoding="utf-8"))
    manifest["suite"] = "another"
    (other / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = evalrunner(lab.ep, "compare", str(lab.root / "base"), str(other))
    assert result.exit_code == 2
    assert f"A holds suite {SUITE!r} and B suite 'another'" in result.output


def test_compare_names_an_unfinished_night_and_the_same_night_on_both_sides(
    lab: Lab, same: Result, tmp_path: Path
) -> None:
    # Before: both compared without a word (baseline refuses either).
    cut = shutil.copytree(lab.root / "same", tmp_path / "cut")
    manifest = json.loads((cut / "manifest.json").read_text(encoding="utf-8"))
    manifest["status"] = "interrupted"
    (cut / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = evalrunner(lab.ep, "compare", str(lab.root / "base"), str(cut))
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: {cut} is an unfinished night (its status is interrupted): compared on the runs "
        f"it holds; finish it with evalrunner run --suite {SUITE} --out {cut} --resume"
    ]
    itself = compare(lab, "base", "base")
    assert itself.exit_code == 0, itself.output
    base = lab.root / "base"
    assert f"note: {base} and {base} hold the same night: nothing in it can differ" in (
        itself.stderr.splitlines()
    )
    assert not [
        line for line in compare(lab, "base", "same").stderr.splitlines() if "note:" in line
    ]


def test_compare_into_a_closed_pipe_exits_with_its_own_code(
    lab: Lab, changed: Result, same: Result
) -> None:
    # `compare A B | head -1` under `set -o pipefail`: before, exit 1 whatever the verdicts
    # (click's answer to the first write into a pipe nobody reads), "regressed" to CI.
    import os
    import subprocess
    import sys

    def closed(b: str) -> int:
        command = Path(sys.executable).with_name("evalrunner")
        reader, writer = os.pipe()
        os.close(reader)
        try:
            done = subprocess.run(
                [str(command), "compare", str(lab.root / "base"), str(lab.root / b)],
                stdout=writer,
                stderr=subprocess.PIPE,
                timeout=120,
            )
        finally:
            os.close(writer)
        assert b"Traceback" not in done.stderr
        return done.returncode

    assert closed("same") == 0
    assert closed("changed") == 1


def test_compare_names_the_scenarios_only_one_side_ran(lab: Lab) -> None:
    # Before: their rows were simply absent, and the table read as if they had been compared.
    alone = TAGS[0]
    lab.world.set(4, **BASELINE)  # type: ignore[arg-type]
    one = lab.run("one", "--runs", "4", "--scenario", alone, "--no-history", "--no-compare")
    assert one.exit_code == 0, one.output
    result = compare(lab, "base", "one", "--no-gate")
    assert result.exit_code == 0, result.output
    others = ", ".join(f"{t} [openai/fake]" for t in sorted(TAGS) if t != alone)
    assert f"note: not compared, only A ran them: {others}" in result.stderr.splitlines()
    assert "only B ran them" not in result.stderr
