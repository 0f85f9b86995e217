"""What a night says, and what `baseline` does, once a suite has moved on from some of its
baselines: one scenario changed behaviour, one changed configuration, one is new. A team's
suite evolves one scenario at a time; the commands a night offers must touch only those."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fake_endpoint import FakeEndpoint, Reply
from night_cli import cli
from runner_agents import write_suite

from evalrunner.cli._main import main

PARIS = {
    "id": "paris",
    "agent": "runner_agents:timed_agent",
    "input": "Capital of France?",
    "checks": {"answer_contains": ["Paris"]},
}
LIMA = {**PARIS, "id": "lima", "input": "Capital of Peru?", "checks": {"answer_contains": ["Lima"]}}
SETTINGS: dict[str, Any] = {"runs": 6, "tolerance": {"min_baseline_nights": 1}}


def night_line(stderr: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith("night: ")]
    return line


def baseline(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["baseline", "--suites-dir", str(tmp_path), "--suite", "caps", *args]
    )


class World:
    """A two-scenario suite with a baseline from night n1; ``wrong`` scenarios answer wrong."""

    def __init__(self, tmp_path: Path, ep: FakeEndpoint) -> None:
        self.tmp_path, self.ep = tmp_path, ep

    def night(self, out: str) -> Result:
        return cli(self.ep, self.tmp_path, "--suite", "caps", "--out", out, "--no-history")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path, "caps", [PARIS, LIMA], **SETTINGS)
    wrong: set[str] = set()

    def respond(body: dict[str, Any], n: int) -> Reply:
        asked = " ".join(str(m.get("content")) for m in body["messages"])
        if "Peru" in asked:
            return Reply("Quito." if "lima" in wrong else "Lima.")
        return Reply("Rome." if "paris" in wrong else "Paris.")

    with FakeEndpoint(responder=respond) as ep:
        w = World(tmp_path, ep)
        w.wrong = wrong  # type: ignore[attr-defined]
        w.night("n1")
        made = baseline(tmp_path, "--from", "n1")
        assert made.exit_code == 0, made.output
        yield w


def _files(tmp_path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((tmp_path / "baselines" / "caps").glob("*"))}


def test_a_flagged_nights_next_command_rebuilds_only_the_flagged_scenarios_baseline(
    world: Any,
) -> None:
    # Before: "evalrunner baseline --suite caps --from n2", which replaced every file and
    # cut the unflagged scenarios back to one night of their own (a review).
    world.wrong.add("paris")
    line = night_line(world.night("n2").stderr)
    assert "flagged: paris success_rate" in line, line
    assert (
        f"evalrunner baseline --suite caps --suites-dir {world.tmp_path} --from n2 "
        "[--from ANOTHER_NIGHT ...] --scenario paris (not --append" in line
    ), line
    before = _files(world.tmp_path)
    done = baseline(world.tmp_path, "--from", "n2", "--scenario", "paris")
    assert done.exit_code == 0, done.output
    after = _files(world.tmp_path)
    assert after["lima--openai_fake.json"] == before["lima--openai_fake.json"]
    assert after["paris--openai_fake.json"] != before["paris--openai_fake.json"]


def test_appending_a_night_that_fails_against_the_baseline_is_refused_unless_asked(
    world: Any,
) -> None:
    # Before: taken in silently; the baseline then held both behaviours, and the next
    # night of the new one passed against it.
    world.wrong.add("paris")
    world.night("n2")
    before = _files(world.tmp_path)
    refused = baseline(world.tmp_path, "--from", "n2", "--append")
    assert refused.exit_code != 0, refused.output
    (said,) = [x for x in refused.output.splitlines() if x.strip()]
    assert "paris--openai_fake.json: the nights given fail success_rate against it" in said, said
    assert (
        f"make it the baseline: evalrunner baseline --suite caps --suites-dir {world.tmp_path} "
        "--from n2 --scenario paris --model openai/fake (without --append); to append them "
        "anyway, add --accept-flagged"
    ) in said, said
    assert _files(world.tmp_path) == before  # nothing written, the unflagged file neither
    taken = baseline(world.tmp_path, "--from", "n2", "--append", "--accept-flagged")
    assert taken.exit_code == 0, taken.output
    assert _files(world.tmp_path) != before


def test_a_night_names_the_scenarios_it_ran_and_did_not_compare(world: Any) -> None:
    # Before: "nothing flagged against the baselines", over a scenario whose configuration
    # had changed and a new one with no baseline (a review).
    moved = {**LIMA, "input": "Capital of Peru, please?"}
    rome = {**PARIS, "id": "rome", "input": "Capital of France, again?"}
    write_suite(world.tmp_path, "caps", [PARIS, moved, rome], **SETTINGS)
    result = world.night("n2")
    line = night_line(result.stderr)
    assert line.startswith("night: "), line
    assert (
        "nothing flagged against the baselines; 1 not compared (their baseline is for another "
        "configuration or model: lima [openai/fake]); 1 not compared (no baseline: rome "
        "[openai/fake])"
    ) in line, line
    # The note offers tonight's runs, not only a night of its own.
    assert (
        "note: rome [openai/fake]: no baseline at baselines/caps/rome--openai_fake.json; create "
        "one from tonight's runs with: evalrunner baseline --suite caps --suites-dir "
        f"{world.tmp_path} --from n2 --scenario rome --model openai/fake, or with a night of "
        f"its own: evalrunner baseline --suite caps --suites-dir {world.tmp_path} --scenario "
        "rome --model openai/fake"
    ) in result.stderr, result.stderr


def test_a_night_run_from_another_directory_says_where_the_projects_baselines_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "no baselines yet, so nothing was compared. Next, to make this night the
    # baseline: ...", exit 0, with the project's baselines one directory away (a review).
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    write_suite(project / "suites", "caps", [PARIS], **SETTINGS)
    elsewhere.mkdir()
    with FakeEndpoint(default=Reply("Paris.")) as ep:
        monkeypatch.chdir(project)
        cli(ep, project / "suites", "--suite", "caps", "--out", "n1", "--no-history")
        made = baseline(project / "suites", "--from", "n1")
        assert made.exit_code == 0, made.output
        monkeypatch.chdir(elsewhere)
        result = cli(ep, project / "suites", "--suite", "caps", "--out", "n2", "--no-history")
    assert (
        f"note: no baselines of caps under {elsewhere.resolve() / 'baselines' / 'caps'}; the "
        f"project of {project / 'suites'} has them in {project.resolve() / 'baselines' / 'caps'}: "
        f"run from {project.resolve()}, or pass --baselines {project.resolve() / 'baselines'}"
    ) in result.stderr, result.stderr


def test_validate_notes_baselines_of_a_model_the_suite_no_longer_runs_or_misnamed(
    world: Any,
) -> None:
    # Before: "ok" after a model string was renamed, and "ok" once the files were renamed
    # but not their model field; the night then said "not compared" (a review).
    def validate() -> Result:
        return CliRunner().invoke(
            main,
            ["validate", "--suites-dir", str(world.tmp_path)],
            env={"EVALRUNNER_MODEL": None, "OPENAI_API_KEY": "sk-test"},
        )

    folder = Path("baselines") / "caps"  # as validate names it, from the project
    write_suite(world.tmp_path, "caps", [PARIS, LIMA], **{**SETTINGS, "models": ["openai/fake2"]})
    said = validate()
    assert said.exit_code == 0, said.output
    assert (
        f"note: {folder / 'lima--openai_fake.json'}: model 'openai/fake' is not one a night of "
        f"{world.tmp_path / 'caps.yaml'} runs (openai/fake2); delete the file if the model is "
        "gone, or, for a model string renamed, rename the file and set its model field to the "
        "new string"
    ) in said.stderr, said.stderr
    for old in sorted((world.tmp_path / folder).glob("*--openai_fake.json")):
        old.rename(old.with_name(old.name.replace("--openai_fake.", "--openai_fake2.")))
    said = validate()
    assert (
        f"note: {folder / 'paris--openai_fake2.json'}: holds the baseline of model "
        "'openai/fake', whose file name ends --openai_fake.json; a night reads it for no "
        "model: rename it back, or set its model field to the model its name is for"
    ) in said.stderr, said.stderr


def test_validate_notes_a_baseline_its_scenario_has_changed_since(world: Any) -> None:
    # Before: "ok", and the night then spent its runs on a scenario it did not compare.
    edited = {**PARIS, "input": "Capital of France, please?"}
    write_suite(world.tmp_path, "caps", [edited, LIMA], **SETTINGS)
    said = CliRunner().invoke(
        main,
        ["validate", "--suites-dir", str(world.tmp_path)],
        env={"EVALRUNNER_MODEL": None, "OPENAI_API_KEY": "sk-test"},
    )
    assert said.exit_code == 0, said.output
    notes = [line for line in said.stderr.splitlines() if "has changed since" in line]
    assert len(notes) == 1, said.stderr
    assert notes[0].startswith(
        f"note: {Path('baselines') / 'caps' / 'paris--openai_fake.json'}: scenario 'paris' has "
        "changed since it was recorded"
    )
    assert notes[0].endswith(
        "a night will not compare it; refresh it with: evalrunner baseline --suite caps "
        f"--suites-dir {world.tmp_path} --scenario paris --model openai/fake"
    )  # with the --suites-dir validate was given (before: without it)
