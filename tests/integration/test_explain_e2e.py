"""The attribution lab end to end: each cause of a change injected into its own scenario
(tests/support/explain_lab.py), a night run and compared through the ``evalrunner``
command, then ``evalrunner explain`` names each flagged scenario's cause and the action
where its runs left the baseline's; the unchanged scenario gets no cause."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from baseline_agents import evalrunner, flagged, outage_night, verdict_table
from click.testing import Result
from explain_lab import AGENTS, CAUSES, FROM_MEMORY, World, write_lab_suite
from fake_endpoint import FakeEndpoint, Fault

from evalrunner.baseline._explain import NONE_FOUND

SUITE = "why"


@dataclass
class Lab:
    ep: FakeEndpoint
    world: World
    root: Path

    def cli(self, *args: str) -> Result:
        return evalrunner(self.ep, *args, "--suite", SUITE, "--suites-dir", str(self.root))

    def run(self, out: str, *args: str) -> Result:
        return self.cli("run", "--out", str(self.root / out), "--runs", "20", *args)

    def explain(self, out: str, *args: str) -> dict[str, list[str]]:
        result = self.cli(
            "explain", "--results", str(self.root / out), "--baselines", str(self.root / "b"), *args
        )
        assert result.exit_code == 0, result.output
        said: dict[str, list[str]] = {}
        for line in result.stdout.splitlines():
            if not line.startswith(" "):
                name, _, rest = line.partition(" × ")
                said[name] = [rest.split(": ", 1)[1]]
            else:
                said[name].append(line.strip())
        return said


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("why")
    write_lab_suite(root, SUITE, min_baseline_nights=1)
    world = World()
    AGENTS.reset()
    with FakeEndpoint(responder=world) as ep, pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        lab = Lab(ep, world, root)
        world.night(1)
        base = lab.run("base", "--no-history", "--no-compare")
        assert base.exit_code == 0, base.output
        built = lab.cli("baseline", "--from", str(root / "base"), "--baselines", str(root / "b"))
        assert built.exit_code == 0, built.output
        yield lab
    AGENTS.reset()


@pytest.fixture(scope="module")
def changed(lab: Lab) -> Result:
    """One night with every cause injected, each into its own scenario."""
    AGENTS.system_prompt["prompt"] = FROM_MEMORY
    AGENTS.region_schema.add("schema")
    AGENTS.tool_answer["tool"] = "Paris (capital since 508)"
    lab.world.night(2, drifted=True)
    try:
        return lab.run(
            "changed", "--baselines", str(lab.root / "b"), "--history", str(lab.root / "h")
        )
    finally:
        AGENTS.reset()


def test_every_injected_cause_is_flagged_and_the_unchanged_scenario_is_not(
    changed: Result,
) -> None:
    assert changed.exit_code == 1, changed.output
    scenarios = {s for s, _ in flagged(verdict_table(changed.stdout))}
    assert scenarios == {"prompt", "schema", "model", "tool"}


def test_the_night_says_why_each_failing_scenario_changed(changed: Result) -> None:
    lines = changed.stdout.splitlines()
    start = next(
        i for i, x in enumerate(lines) if x.startswith("Why the failing scenarios changed")
    )
    causes = {x.split(" × ")[0]: x.split(": ", 1)[1] for x in lines[start + 1 :] if " × " in x}
    assert causes == {
        "model": causes["model"],
        "prompt": "cause: request changed (system prompt, 1 line)",
        "schema": "cause: request changed (tool 'lookup' schema)",
        "tool": "cause: tool 'lookup' output changed for the same arguments",
    }
    # The sentinel confirmed it (the next test): the cause says so.
    assert causes["model"].startswith("cause: model (the baseline's first request sent again")


def test_explain_names_each_cause_and_where_the_runs_diverge(lab: Lab, changed: Result) -> None:
    said = lab.explain("changed")
    assert said["prompt"][0] == "cause: request changed (system prompt, 1 line)"
    assert said["schema"][0] == "cause: request changed (tool 'lookup' schema)"
    assert said["tool"][0] == "cause: tool 'lookup' output changed for the same arguments"
    assert re.fullmatch(
        r"cause: model \(same first request; at the first action: baseline lookup 20/20, "
        r"tonight lookup (\d+)/(\d+) and \(answer\) \d+/\2 \(p=.*\)\)",
        said["model"][0],
    ), said["model"]
    assert said["steady"] == [NONE_FOUND]
    # The cause line already says where the model's runs diverge: not once more below it.
    assert not any(x.startswith("runs diverge") for x in said["model"][1:]), said["model"]
    # Where the runs left the baseline's path: the injected action (tonight's N is escalated).
    assert said["prompt"][1].startswith("runs diverge at the first action: baseline lookup 20/20")
    assert said["schema"][1].startswith("runs diverge after lookup: baseline (answer) 20/20")
    assert said["tool"][1].startswith("runs diverge after lookup: baseline (answer) 20/20")
    # The short diff of the request.
    assert "+Answer from memory when you can." in said["prompt"]


def test_a_night_like_the_baseline_gets_no_cause(lab: Lab) -> None:
    lab.world.night(3)
    same = lab.run("same", "--baselines", str(lab.root / "b"), "--no-history")
    assert same.exit_code == 0, same.output
    said = lab.explain("same")
    assert {name: lines[0] for name, lines in said.items()} == dict.fromkeys(CAUSES, NONE_FOUND)


def test_an_outage_night_is_not_explained_as_runs_like_the_baseline(lab: Lab) -> None:
    # Every run was infra_error, and each scenario read "cause: none found (the first
    # request, the tools' answers and the runs' actions are as in the baseline)", exit 0.
    outage_night(lab.root, SUITE, lab.root / "down", runs=1)
    result = lab.cli(
        "explain", "--results", str(lab.root / "down"), "--baselines", str(lab.root / "b")
    )
    assert result.exit_code == 3, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"explain: {lab.root / 'down'} is an outage night: no run measured the agent, so there "
        "is nothing to explain. Next: check the model endpoint, and run that night again"
    )


def test_a_baseline_written_before_traces_says_to_accept_a_new_one(
    lab: Lab, changed: Result, tmp_path: Path
) -> None:
    old = tmp_path / "b" / SUITE
    old.mkdir(parents=True)
    doc = json.loads((lab.root / "b" / SUITE / "steady--openai_fake.json").read_text())
    doc["format_version"] = 1
    for night in doc["nights"]:
        del night["traces"]
    (old / "steady--openai_fake.json").write_text(json.dumps(doc))
    result = lab.cli(
        "explain", "--results", str(lab.root / "changed"), "--baselines", str(tmp_path / "b")
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "steady × openai/fake: cause: unavailable (this baseline was written before baselines "
        "kept traces; request drift unavailable: accept a new baseline with 'evalrunner baseline')"
    ]
    # The sentinel has nothing to send: it says so, and a cron job does not read it as a pass.
    canary = lab.cli("sentinel", "--scenario", "steady", "--baselines", str(tmp_path / "b"))
    assert canary.exit_code == 2, canary.output
    assert canary.stdout == (
        "steady × openai/fake: sentinel: the baseline keeps no first request to send again; "
        "accept a new baseline with 'evalrunner baseline'\n"
    )


def test_the_report_summary_and_junit_say_why(lab: Lab, changed: Result) -> None:
    out = lab.root / "report"
    made = evalrunner(lab.ep, "report", "--history", str(lab.root / "h"), "--out", str(out))
    assert made.exit_code == 0, made.output
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "  - cause: tool 'lookup' output changed for the same arguments" in summary
    junit = ET.parse(out / "junit.xml").getroot()
    messages = {
        case.get("classname"): str(case.find("failure").get("message"))  # type: ignore[union-attr]
        for case in junit.iter("testcase")
        if case.find("failure") is not None
    }
    assert messages[f"{SUITE}.prompt"].endswith("; cause: request changed (system prompt, 1 line)")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<h4>Why it changed</h4>") == 4
    assert "+Answer from memory when you can." in page


def test_the_night_sends_the_baseline_request_again_where_the_request_did_not_change(
    changed: Result,
) -> None:
    lines = changed.stdout.splitlines()
    model = next(i for i, x in enumerate(lines) if x.startswith("model × "))
    assert lines[model].startswith(
        "model × openai/fake: cause: model (the baseline's first request sent again: "
        "first action lookup 20/20 -> "
    ), lines[model]
    sentinel = next(x.strip() for x in lines[model + 1 :] if x.strip().startswith("sentinel:"))
    assert sentinel.endswith(": the model answers it otherwise")
    # A changed request is the cause by itself: nothing is sent again for it.
    prompt = next(i for i, x in enumerate(lines) if x.startswith("prompt × "))
    assert not lines[prompt + 1].strip().startswith("sentinel:")


def test_a_model_that_starts_calling_tools_in_parallel_is_found_as_the_model(lab: Lab) -> None:
    # Its first tool call is as before, so the first actions agreed: the sentinel said
    # "no change" and the night's explanation "unexplained".
    lab.world.night(6, parallel=True)
    try:
        night = lab.run(
            "parallel", "--baselines", str(lab.root / "b"), "--history", str(lab.root / "h6")
        )
    finally:
        lab.world.night(7)
    lines = night.stdout.splitlines()
    model = next(x for x in lines if x.startswith("model × "))
    assert model.startswith(
        "model × openai/fake: cause: model (the baseline's first request sent again: "
        "first action lookup 20/20 -> 0/20 (lookup + lookup 20/20)"
    ), night.stdout
    said = lab.explain("parallel", "--scenario", "model")
    assert re.match(
        r"cause: model \(same first request; at the first model response: baseline lookup "
        r"20/20, tonight lookup 0/(\d+) and lookup \+ lookup \1/\1 \(p=",
        said["model"][0],
    ), said


def test_the_sentinel_on_its_own_tells_a_changed_model_from_an_unchanged_one(lab: Lab) -> None:
    lab.world.night(4, drifted=True)
    moved = lab.cli("sentinel", "--scenario", "model", "--baselines", str(lab.root / "b"))
    assert moved.exit_code == 1, moved.output
    assert re.fullmatch(
        r"model × openai/fake: sentinel: the baseline's first request sent 20 times: "
        r"first action lookup 20/20 -> \d+/20 \(\(answer\) \d+/20\), p=\S+ \(alpha 0.05\): "
        r"the model answers it otherwise\n",
        moved.stdout,
    ), moved.stdout
    lab.world.night(5)
    same = lab.cli("sentinel", "--baselines", str(lab.root / "b"), "--calls", "10")
    assert same.exit_code == 0, same.output
    assert len(same.stdout.splitlines()) == len(CAUSES)
    assert all(line.endswith(": no change") for line in same.stdout.splitlines()), same.stdout


def test_a_sentinel_that_reaches_no_model_says_so_and_counts_nothing(lab: Lab) -> None:
    lab.ep.responder = lambda body, n: Fault("503")
    try:
        down = lab.cli("sentinel", "--scenario", "steady", "--baselines", str(lab.root / "b"))
    finally:
        lab.ep.responder = lab.world
    assert down.exit_code == 3, down.output
    assert "sent 20 times (20 unreachable: " in down.stdout
    assert down.stdout.rstrip().endswith(": too few answers to compare")


def test_a_sentinel_on_a_damaged_baseline_names_the_file_and_field_not_an_outage(
    lab: Lab, tmp_path: Path
) -> None:
    """A request no endpoint could read failed every call and read as the provider's outage
    (exit 3), while ``validate`` passed the file."""
    copy = tmp_path / "b"
    shutil.copytree(lab.root / "b", copy)
    damaged = next((copy / SUITE).glob("model--*.json"))
    data = json.loads(damaged.read_text())
    for night in data["nights"]:
        if (night.get("traces") or {}).get("sent"):
            night["traces"]["sent"]["messages"] = "hello"
    damaged.write_text(json.dumps(data))
    said = lab.cli("sentinel", "--scenario", "model", "--baselines", str(copy))
    assert said.exit_code == 2, said.output
    assert f"{damaged.name}: nights." in said.output
    assert ".traces.sent: 'messages' must be a non-empty list" in said.output
    assert "unreachable" not in said.output and "Traceback" not in said.output
