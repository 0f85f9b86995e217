"""End to end through ``evalrunner``: a multi-scenario suite against an anchored baseline.

Six scenarios, a baseline accepted from three nights of 10 runs (the default
minimum), then nights where one scenario changes blatantly (two lookups instead
of one, and mostly wrong answers). The night fails on that scenario alone, the
changed scenario is escalated past its 10 runs, the history keeps the evidence
accumulated per cell, and accepting a new baseline restarts it. A baseline of one
night says in one line that it is too young to gate, and fails nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from baseline_agents import (
    DOUBLE_LOOKUP_WRONG,
    GOOD,
    World,
    evalrunner,
    flagged,
    make_suite,
    verdict_table,
)
from click.testing import Result
from fake_endpoint import FakeEndpoint

from evalrunner.history._store import read_entries
from evalrunner.suite._record import CellKey

SUITE = "detect"
TAGS = tuple(f"s{i}" for i in range(6))
CHANGED = "s3"
CELL = CellKey(CHANGED, "openai/fake")


@dataclass
class Lab:
    ep: FakeEndpoint
    world: World
    root: Path

    def cli(self, *args: str) -> Result:
        return evalrunner(self.ep, *args, "--suite", SUITE, "--suites-dir", str(self.root))

    def night(self, out: str, seed: int, baselines: str, *extra: str, changed: bool) -> Result:
        self.world.set(seed, **{CHANGED: DOUBLE_LOOKUP_WRONG if changed else GOOD})
        return self.cli(
            "run",
            "--out",
            str(self.root / out),
            "--baselines",
            str(self.root / baselines),
            *extra,
        )

    def accept(self, baselines: str, *nights: str) -> None:
        sources = [a for n in nights for a in ("--from", str(self.root / n))]
        made = self.cli("baseline", *sources, "--baselines", str(self.root / baselines))
        assert made.exit_code == 0, made.output


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("detect")
    # Latency on a loopback fake endpoint measures the machine's load, not the agent: on
    # a loaded machine it moved between the baseline nights and tonight in every scenario.
    make_suite(root, SUITE, TAGS, runs=10, tolerance={"margins": {"latency_s": 20.0}})
    world = World(dict.fromkeys(TAGS, GOOD), seed=1)
    with FakeEndpoint(responder=world) as ep, pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # relative defaults land here, never in the repository
        lab = Lab(ep, world, root)
        for i in (1, 2, 3):
            world.set(10 + i)
            done = lab.cli("run", "--out", str(root / f"n{i}"), "--no-history", "--no-compare")
            assert done.exit_code == 0, done.output
        lab.accept("mature", "n1", "n2", "n3")
        lab.accept("young", "n1")
        yield lab


def test_a_blatant_change_in_one_scenario_of_six_fails_the_night_on_that_scenario(
    lab: Lab,
) -> None:
    history = str(lab.root / "history")
    result = lab.night("c1", 21, "mature", "--history", history, changed=True)
    assert result.exit_code == 1, result.output
    failing = flagged(verdict_table(result.stdout))
    assert {(CHANGED, "tool_sequence"), (CHANGED, "step_count")} <= failing
    assert {scenario for scenario, _ in failing} == {CHANGED}, sorted(failing)
    # Suspicious after its 10 runs, the scenario got more (up to 3 x 10) before the verdict.
    assert re.search(
        rf"^escalation: {CHANGED}\|openai/fake: escalating, after 10 runs", result.stderr, re.M
    )
    # And what the extra runs bought, judged again at the planned 10 runs.
    said = re.search(
        r"^escalated: (\d+) cells? \(\+\d+ runs\); the extra runs changed a verdict in (\d+), "
        r"would not have helped: (\d+) \(the same verdicts at their planned runs\)$",
        result.stderr,
        re.M,
    )
    assert said is not None, result.stderr
    escalated, changed, same = map(int, said.groups())
    assert escalated >= 1 and changed + same == escalated
    assert "too young" not in result.stderr
    # The evidence accumulated against the anchor is in the history, per cell and metric.
    [entry] = read_entries(history, suites=[SUITE])
    state = entry.evidence[CELL]
    # tool_sequence failed the night: its alarm was raised, so its sums start over (the
    # night-to-night spread stays); the verdict shows the night's evidence.
    kept = state.metrics["tool_sequence"]
    assert state.nights == 1 and kept.nights == 0 and kept.last_mean is not None
    assert {v.evidence_nights for v in entry.verdicts if v.metric == "tool_sequence"} == {1}

    # A second night adds to it; accepting a new baseline starts it again.
    again = lab.night("c2", 22, "mature", "--history", history, changed=True)
    assert again.exit_code == 1, again.output
    latest = read_entries(history, suites=[SUITE])[-1]
    assert latest.evidence[CELL].nights == 2
    assert latest.evidence[CELL].anchor == state.anchor
    lab.accept("mature", "n1", "n2", "c2")
    fresh = lab.night("c3", 23, "mature", "--history", history, changed=True)
    newest = read_entries(history, suites=[SUITE])[-1]
    assert newest.evidence[CELL].anchor != state.anchor, fresh.output
    assert newest.evidence[CELL].nights == 1


def test_a_baseline_too_young_to_gate_says_so_in_one_line_and_fails_nothing(lab: Lab) -> None:
    result = lab.night("y1", 31, "young", "--no-history", changed=True)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    young = [line for line in lines if line.startswith("note:") and "too young to gate (" in line]
    assert len(young) == len(TAGS)
    # The night's line names what the young baseline flagged, failing nothing.
    (night,) = [line for line in lines if line.startswith("night: ")]
    assert (
        f"flagged against baselines too young to gate (not failing the night): {CHANGED} " in night
    )
    # And that nothing could have failed it, loudly (issue 54, A2): "nothing flagged" over a
    # night that could flag nothing read as a pass.
    assert (
        night.startswith("night: 60 runs (")
        and (
            "; nothing could fail tonight: every baseline is too young to gate (the most nights "
            "one holds: 1; a scenario gates from its tolerance's min_baseline_nights, default 3)"
        )
        in night
    )
    assert "Next, once this night behaved as intended: evalrunner baseline --suite" in night
    assert (
        f"note: {CHANGED} [openai/fake]: baseline too young to gate (1 night of 10 runs; "
        "3 needed): compared and reported, not gating; accept 2 more nights into it"
    ) in young
    # Still compared and shown: the would-be gating rows, marked (young).
    rows = verdict_table(result.stdout)
    assert {r["metric"] for r in rows if r["scenario"] == CHANGED} >= {"tool_sequence (young)"}
    assert "escalat" not in result.stderr  # a young baseline is not escalated (and no line says so)


def test_plan_prints_mde_and_runs_needed_at_the_verdicts_level(lab: Lab) -> None:
    result = lab.cli("plan", "--baselines", str(lab.root / "mature"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "scenario", "model", "metric", "margin", "MDE", "at", "runs", "MDE", "at", "budget",
        "runs", "for", "margin", "note",
    ]  # fmt: skip
    rows = [line for line in lines[2:] if line.startswith("s")]
    assert len(rows) == len(TAGS) * 5  # every gating metric of every scenario
    assert all("(10)" in row and "(30)" in row for row in rows)  # at N and at 3N
    # Bonferroni-like level of a lone change among 6 x 5 gating tests at q 0.05.
    assert re.search(r"p <= 0\.0017; runs a night: 60 now", result.stdout)
    # The evidence's false-alarm budget, per scenario-season and for the suite's 6 cells.
    assert (
        "evidence since the anchor: seasons of 90 nights; false-alarm budget 0.05 per "
        "scenario-season (split over its gating metrics), about 0.3 per suite-season of 6 cells"
    ) in result.stdout
    sentinel = re.search(
        r"when a night fails, the sentinel \(.*\) adds at most 10% of its model calls, about "
        r"(\d+), at most 20 and at least 5 a scenario: here enough for (\d+) failing scenarios?;",
        result.stdout,
    )
    # Before: the 5-call minimum that skips it when many scenarios fail went unsaid.
    assert sentinel and int(sentinel[2]) == int(sentinel[1]) // 5 > 0, result.stdout
    none = lab.cli("plan", "--baselines", str(lab.root / "nowhere"))
    assert none.exit_code == 2 and "has no usable baseline" in none.output
    # Before: only the bare command (a night of its own), where run's hint gave --from.
    # The command carries the locations given, so it accepts into the baselines asked about.
    where = f"--suites-dir {lab.root} --baselines {lab.root / 'nowhere'}"
    assert (
        f"evalrunner baseline --suite {SUITE} {where} --from <a night's results directory>, "
        in none.output
    )
    # A night's models, as run --model gives them (before: no such option, and a baseline
    # for the model run --model gave read as "no usable baseline", its fix running another).
    given = lab.cli("plan", "--baselines", str(lab.root / "mature"), "--model", "openai/fake")
    assert given.exit_code == 0 and given.stdout == result.stdout
    other = lab.cli("plan", "--baselines", str(lab.root / "mature"), "--model", "openai/other")
    assert other.exit_code == 2
    # Before: "no usable baseline ...", naming neither the model that has one nor its plan.
    where = f"--suites-dir {lab.root} --baselines {lab.root / 'mature'}"
    assert other.stderr.splitlines()[-1] == (
        f"error: suite {SUITE!r} has no baseline under {lab.root / 'mature'} for openai/other; "
        f"its baselines are for openai/fake (evalrunner plan --suite {SUITE} {where} --model "
        f"openai/fake), or accept nights first: evalrunner baseline --suite {SUITE} {where} "
        "--model openai/other"
    )


def test_plan_for_a_suite_without_models_names_the_models_its_baselines_are_for(
    lab: Lab, tmp_path: Path
) -> None:
    # A team that ran `--model openai/fake` from the start: plan planned for the embedded
    # model, found no baseline for it, and its fix (`evalrunner baseline`) would run that.
    suites = tmp_path / "suites"
    suites.mkdir()
    doc = yaml.safe_load((lab.root / f"{SUITE}.yaml").read_text())
    del doc["models"]
    (suites / f"{SUITE}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    result = evalrunner(
        lab.ep, "plan", "--suite", SUITE, "--suites-dir", str(suites),
        "--baselines", str(lab.root / "mature"),
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == (
        f"error: suite {SUITE!r} has no baseline under {lab.root / 'mature'} for the models a "
        f"night would run; its baselines are for openai/fake: evalrunner plan --suite {SUITE} "
        f"--suites-dir {suites} --baselines {lab.root / 'mature'} --model openai/fake"
    )


def test_plan_reads_the_nights_since_the_anchor_from_the_history_and_says_when_there_are_none(
    lab: Lab,
) -> None:
    lab.accept("planned", "n1", "n2", "n3")
    baselines = ("--baselines", str(lab.root / "planned"))
    empty = str(lab.root / "no-history")
    Path(empty).mkdir()  # there, but no night in it (a location that is not there is a typo)
    alone = lab.cli("plan", *baselines, "--history", empty)
    assert alone.exit_code == 0, alone.output
    assert (
        f"note: {empty} holds no night since the anchor of 6 of 6 cells: planned from their "
        "baselines' nights alone, as for a first night"
    ) in alone.stderr
    # The README's fresh-checkout example: the default location, typed out, before any night.
    default = lab.cli("plan", *baselines, "--history", "reports/history")
    assert default.exit_code == 0 and not (lab.root / "reports" / "history").exists()
    assert "note: reports/history holds no night since the anchor" in default.stderr
    history = str(lab.root / "plan-history")
    night = lab.night("p1", 41, "planned", "--history", history, changed=False)
    assert night.exit_code == 0, night.output
    since = lab.cli("plan", *baselines, "--history", history)
    assert since.exit_code == 0, since.output
    assert "holds no night" not in since.stderr
    # One night since is no pair yet: nothing to widen, the same plan.
    assert since.stdout == alone.stdout
