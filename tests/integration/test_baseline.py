"""Baseline files: their format, the rolling window, and refusing what does not fit.

Nights come from the fake endpoint (tests/baseline_agents.py) through the
``evalrunner`` command. A broken or mismatched baseline must give one clear
line and exit 2 (or, for another model or configuration, a "not compared" note
naming the refresh command), and must never be overwritten on the way.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from baseline_agents import GOOD, PERFECT, World, evalrunner, make_suite, scenario, verdict_table
from click.testing import Result
from fake_endpoint import FakeEndpoint, Fault
from runner_agents import write_suite

from evalrunner import __version__
from evalrunner import _clock as clock
from evalrunner.baseline._file import (
    BASELINE_FORMAT_VERSION,
    Baseline,
    baseline_path,
    load_baseline,
)
from evalrunner.history._store import read_entries
from evalrunner.live._results import ResultsDir
from evalrunner.stats._formulas import pass_at_k, pass_hat_k, wilson
from evalrunner.suite._loader import load_suite
from evalrunner.suite._record import CellKey, RunRecord

SUITE = "pool"
TAGS = ("capital", "steady")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@dataclass
class Lab:
    ep: FakeEndpoint
    world: World
    root: Path

    @property
    def suites(self) -> Path:
        return self.root / "suites"

    def night(self, out: str, runs: int = 4, *args: str) -> Path:
        result = evalrunner(
            self.ep,
            "run",
            "--suite",
            SUITE,
            "--suites-dir",
            str(self.suites),
            "--runs",
            str(runs),
            "--out",
            str(self.root / out),
            "--no-history",
            "--no-compare",
            *args,
        )
        assert result.exit_code == 0, result.output
        return self.root / out


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("baselines")
    make_suite(root / "suites", SUITE, TAGS)
    world = World({"capital": GOOD, "steady": PERFECT}, seed=1)
    with FakeEndpoint(responder=world) as ep, pytest.MonkeyPatch.context() as mp:
        mp.chdir(
            root
        )  # relative defaults (results/, reports/, baselines/) would land here, not in the repo
        lab = Lab(ep, world, root)
        for i in (1, 2, 3):
            world.reseed(i)
            lab.night(f"night{i}")
        world.reseed(4)
        lab.night("big", runs=12)
        yield lab


@pytest.fixture
def where(tmp_path: Path) -> Path:
    """A fresh baselines directory for one test."""
    return tmp_path / "baselines"


def baseline_cmd(lab: Lab, where: Path, *args: str, suites: Path | None = None) -> Result:
    return evalrunner(
        lab.ep,
        "baseline",
        "--suite",
        SUITE,
        "--suites-dir",
        str(suites or lab.suites),
        "--baselines",
        str(where),
        *args,
    )


def run_cmd(lab: Lab, where: Path, out: Path, *args: str, suites: Path | None = None) -> Result:
    return evalrunner(
        lab.ep,
        "run",
        "--suite",
        SUITE,
        "--suites-dir",
        str(suites or lab.suites),
        "--runs",
        "3",
        "--out",
        str(out),
        "--baselines",
        str(where),
        "--history",
        str(out.parent / "history"),
        *args,
    )


def file_of(where: Path, tag: str, model: str = "openai/fake") -> Path:
    return baseline_path(where, SUITE, tag, model)


def snapshot(where: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(where.rglob("*")) if p.is_file()}


def one_error(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.output
    return errors[0]


# ----------------------------------------------------------------------------- format


def test_baseline_file_format(lab: Lab, where: Path) -> None:
    result = baseline_cmd(lab, where, "--from", str(lab.root / "big"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"wrote {file_of(where, t)}" for t in TAGS]

    path = file_of(where, "capital")
    assert path == where / SUITE / "capital--openai_fake.json"
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    # Reviewable JSON: sorted keys, 2-space indent, newline at the end.
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert text.startswith('{\n  "created_at": ')

    suite = load_suite(lab.suites / f"{SUITE}.yaml")
    resolved = next(s for s in suite.scenarios if s.id == "capital")
    manifest = ResultsDir(lab.root / "big").read_manifest()
    assert doc["format_version"] == BASELINE_FORMAT_VERSION == 7
    assert (doc["suite"], doc["scenario"], doc["model"]) == (SUITE, "capital", "openai/fake")
    assert doc["fingerprint"] == resolved.fingerprint == manifest.scenarios["capital"]
    assert ISO.match(doc["created_at"]) and doc["evalrunner_version"] == __version__
    assert doc["window"] == 5

    # The raw per-run records, exactly as the results directory holds them.
    [night] = doc["nights"]
    assert night["source"] == "big" and night["started_at"] == manifest.started_at
    raw = sorted(
        (r for r in ResultsDir(lab.root / "big").records() if r.scenario == "capital"),
        key=lambda r: r.index,
    )
    assert [RunRecord.model_validate(r) for r in night["records"]] == raw
    baseline = load_baseline(path)
    assert isinstance(baseline, Baseline) and len(baseline.records) == len(raw) == 12

    # The summary: rates with intervals, medians, tool sequences, pass^k and pass@k.
    summary = doc["summary"]
    passed = sum(r.outcome == "passed" for r in raw)
    assert 0 < passed < 12  # GOOD errs now and then: pass^k and pass@k differ
    assert summary["n"] == summary["n_valid"] == 12 and summary["infra_excluded"] == 0
    success = summary["rates"]["success_rate"]
    assert (success["k"], success["n"]) == (passed, 12)
    assert success["estimate"] == pytest.approx(passed / 12)
    assert success["ci95"] == pytest.approx(list(wilson(passed, 12)))
    assert (
        summary["rates"]["skip_rate"]["estimate"] == summary["rates"]["crash_rate"]["estimate"] == 0
    )
    assert summary["medians"]["step_count"] == 4 and summary["medians"]["tool_calls"] == 1
    assert summary["tool_sequences"] == {"lookup": 1.0}
    assert set(summary["pass_hat_k"]) == set(summary["pass_at_k"]) == {"1", "3", "5"}
    for k in (1, 3, 5):
        assert summary["pass_hat_k"][str(k)] == pytest.approx(pass_hat_k(12, passed, k))
        assert summary["pass_at_k"][str(k)] == pytest.approx(pass_at_k(12, passed, k))
    assert summary["pass_hat_k"]["5"] == pytest.approx(math.comb(passed, 5) / math.comb(12, 5))
    assert summary["pass_hat_k"]["3"] < summary["pass_hat_k"]["1"] < summary["pass_at_k"]["3"]
    # A typical run's normalised trajectory, for diffs in the report.
    assert doc["typical"]["steps"]

    steady = json.loads(file_of(where, "steady").read_text())["summary"]
    assert steady["pass_hat_k"] == steady["pass_at_k"] == {"1": 1.0, "3": 1.0, "5": 1.0}


def test_baselines_are_anchored_nights_accepted_on_purpose_are_all_kept(
    lab: Lab, where: Path
) -> None:
    sources = [str(lab.root / f"night{i}") for i in (1, 2, 3)]
    nights = ["night1", "night2", "night3"]  # names, never this machine's paths
    assert baseline_cmd(lab, where, "--from", sources[0]).exit_code == 0
    anchors = {load_baseline(file_of(where, "capital")).anchor}
    for source in sources[1:]:
        result = baseline_cmd(lab, where, "--from", source, "--append")
        assert result.exit_code == 0, result.output
        anchors.add(load_baseline(file_of(where, "capital")).anchor)
    assert len(anchors) == 3  # each acceptance is a new anchor: accumulated evidence restarts
    for tag in TAGS:
        baseline = load_baseline(file_of(where, tag))
        assert [n.source for n in baseline.nights] == nights  # nothing rolled out
        assert len(baseline.records) == 12
        assert baseline.summary["n"] == 12  # the summary is of every accepted run
        assert [len(n.records) for n in baseline.nights] == [4, 4, 4]

    # Accepting a night that is already in does not count it twice, nor move the anchor,
    # and says so.
    before = load_baseline(file_of(where, "capital")).anchor
    held = file_of(where, "capital").read_bytes()
    again = baseline_cmd(lab, where, "--from", sources[2], "--append")
    assert again.exit_code == 0
    name = file_of(where, "capital").name
    assert f"note: {name} held every night given already; none added" in again.stderr
    # Not rewritten either (before: "wrote", a new created_at, a diff in review for nothing).
    assert file_of(where, "capital").read_bytes() == held
    assert f"unchanged {file_of(where, 'capital')}" in again.stdout
    after = load_baseline(file_of(where, "capital"))
    assert [n.source for n in after.nights] == nights and after.anchor == before

    # Without --append the file is replaced by exactly the nights given, and says so.
    replaced = baseline_cmd(lab, where, "--from", sources[0])
    assert replaced.exit_code == 0
    assert [n.source for n in load_baseline(file_of(where, "steady")).nights] == nights[:1]
    for tag in TAGS:
        name = file_of(where, tag).name
        assert (
            f"note: {name} held 3 accepted nights; without --append it now holds only the 1 "
            "given, 2 of the old not among them (restore it from version control to undo, or "
            "rebuild with --append to keep them)"
        ) in replaced.stderr
    # Rebuilt from the very nights it holds: nothing was lost, and nothing says otherwise.
    same = baseline_cmd(lab, where, "--from", sources[0])
    notes = [line for line in same.stderr.splitlines() if line.startswith("note:")]
    assert same.exit_code == 0 and notes == [
        "note: these baselines hold 1 night; a scenario gates once its baseline holds 3 "
        "(min_baseline_nights), so until then a night flags nothing: accept more nights that "
        "behave as intended with --from NIGHT --append, or run several now with --nights"
    ], same.stderr

    # The rolling window is gone, with a line that says why and what to do instead.
    result = baseline_cmd(lab, where, "--from", sources[1], "--append", "--window", "2")
    assert result.exit_code == 2
    assert "--window is gone: baselines are anchored" in result.output
    assert [n.source for n in load_baseline(file_of(where, "steady")).nights] == nights[:1]


def test_a_copy_of_a_night_already_accepted_replaces_it_rather_than_counting_it_twice(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    # It passed the check by directory and then failed the file's own check by runs:
    # a pydantic traceback, exit 1.
    night = lab.root / "night1"
    assert baseline_cmd(lab, where, "--from", str(night)).exit_code == 0
    copy = shutil.copytree(night, tmp_path / "copy-of-night1")
    result = baseline_cmd(lab, where, "--from", str(copy), "--append")
    assert result.exit_code == 0, result.output
    for tag in TAGS:
        assert [n.source for n in load_baseline(file_of(where, tag)).nights] == ["copy-of-night1"]


# ---------------------------------------------- broken baselines: one line, exit 2, untouched


def corrupt(kind: str, text: str) -> str | bytes:
    if kind == "random_bytes":  # not text at all: it used to be a 44-line traceback
        return bytes(range(128, 256)) * 4
    doc = json.loads(text)
    if kind == "truncated":
        return text[: len(text) // 2]
    if kind == "format_version":
        doc["format_version"] = 99
    elif kind == "missing_field":
        del doc["fingerprint"]
    elif kind == "bad_record":
        doc["nights"][0]["records"][0]["outcome"] = "exploded"
    elif kind == "edited_summary":  # what reviewers read in the diff, and nothing tested
        doc["summary"]["medians"]["step_count"] += 2
    elif kind == "not_an_object":
        return "[]\n"
    elif kind == "merge_conflict":  # two branches appended a night each, unresolved
        lines = text.splitlines(keepends=True)
        return "".join(
            [
                *lines[:3],
                "<<<<<<< HEAD\n",
                lines[3],
                "=======\n",
                lines[3],
                ">>>>>>> other\n",
                *lines[4:],
            ]
        )
    elif kind == "duplicate_key":  # the same conflict resolved by keeping both sides
        return text.replace('"outcome": ', '"outcome": "failed", "outcome": ', 1)
    return json.dumps(doc, indent=2)


EXPECTED_ERRORS = {
    "truncated": r"not valid JSON at line \d+ column \d+",
    "format_version": r"baseline format_version 99 is newer than this evalrunner \([^)]+\) reads \(up to 7, written by evalrunner [^)]+\); upgrade evalrunner to read it",
    "missing_field": r"fingerprint: Field required; rebuild it with 'evalrunner baseline'",
    "bad_record": r"nights\.0\.records\.0\.outcome: Input should be 'passed', .*; rebuild it with 'evalrunner baseline'",
    # Its fix once (before: "...; rebuild it with ..., or restore it; rebuild it with ...").
    "edited_summary": r"summary\.medians\.step_count is \d+(\.\d+)?, but its runs give \d+(\.\d+)?: the summary is worked out from the runs, and an edit or a merge changed one and not the other; rebuild it with 'evalrunner baseline'$",
    "not_an_object": r"expected a JSON object; rebuild it with 'evalrunner baseline'",
    "random_bytes": r"baseline is not UTF-8 text \(byte 0x80 at offset 0\); save it as UTF-8 JSON",
    "merge_conflict": r"holds git merge conflict markers \(<<<<<<< at line 4\); resolve the conflict",
    "duplicate_key": r"the key 'outcome' appears twice in one object, .*; keep one",
}


@pytest.mark.parametrize("kind", list(EXPECTED_ERRORS))
def test_a_broken_baseline_is_one_line_exit_2_and_left_alone(
    lab: Lab, where: Path, tmp_path: Path, kind: str
) -> None:
    assert baseline_cmd(lab, where, "--from", str(lab.root / "night1")).exit_code == 0
    path = file_of(where, "capital")
    broken = corrupt(kind, path.read_text())
    if isinstance(broken, bytes):
        path.write_bytes(broken)
    else:
        path.write_text(broken)
    before = snapshot(where)

    # Comparing with it.
    result = run_cmd(lab, where, tmp_path / "out")
    assert result.exit_code == 2, result.output
    line = one_error(result)
    assert line.startswith(f"error: {path}: ") and re.search(EXPECTED_ERRORS[kind], line), line
    assert not (tmp_path / "history").exists()  # no half-compared night in the history
    # Pooling onto it.
    result = baseline_cmd(lab, where, "--from", str(lab.root / "night2"), "--append")
    assert result.exit_code == 2, result.output
    assert one_error(result).startswith(f"error: {path}: ")
    # Neither touched any baseline, the broken one included.
    assert snapshot(where) == before


# ------------------------------------------------------ mismatched baselines: "not compared"


def test_a_baseline_of_another_model_is_not_compared(lab: Lab, where: Path, tmp_path: Path) -> None:
    assert baseline_cmd(lab, where, "--from", str(lab.root / "night1")).exit_code == 0
    # openai/fake's file, copied to where openai/other's would be.
    shutil.copy(file_of(where, "capital"), file_of(where, "capital", "openai/other"))
    before = snapshot(where)
    result = run_cmd(
        lab, where, tmp_path / "out", "--model", "openai/other", "--scenario", "capital"
    )
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert notes == [
        f"note: capital [openai/other]: not compared, {file_of(where, 'capital', 'openai/other')} is for model "
        f"'openai/fake'; refresh with: evalrunner baseline --suite {SUITE} --suites-dir "
        f"{lab.suites} --baselines {where} --scenario capital --model openai/other"
    ]
    assert "Compared with baselines" not in result.stdout
    assert snapshot(where) == before


def edited_suite(lab: Lab, tmp_path: Path, tag: str) -> Path:
    """The suite with ``tag``'s checks edited (so its fingerprint changes); returns its directory."""
    scenarios = [scenario(t) for t in TAGS]
    for sc in scenarios:
        if sc["id"] == tag:
            sc["checks"] = {**sc["checks"], "max_tool_calls": 3}
    write_suite(tmp_path / "edited", SUITE, scenarios, concurrency=8)
    return tmp_path / "edited"


def test_a_baseline_of_another_configuration_is_not_compared(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    assert baseline_cmd(lab, where, "--from", str(lab.root / "night1")).exit_code == 0
    old = load_baseline(file_of(where, "capital")).fingerprint
    edited = edited_suite(lab, tmp_path, "capital")
    before = snapshot(where)
    result = run_cmd(lab, where, tmp_path / "out", suites=edited)
    assert result.exit_code == 0, result.output
    fingerprint = ResultsDir(tmp_path / "out").read_manifest().scenarios["capital"]
    assert fingerprint != old
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    notes = [line for line in notes if "too young to gate" not in line]  # one-night baselines
    assert notes == [
        f"note: capital [openai/fake]: not compared, the scenario's configuration changed since "
        f"{file_of(where, 'capital')} was recorded (fingerprint {old} -> {fingerprint}); "
        f"refresh with: evalrunner baseline --suite {SUITE} --suites-dir {edited} --baselines "
        f"{where} --scenario capital --model openai/fake",
        "note: capital [openai/fake]: its runs sent the first request its baseline's did: "
        "what changed is in its checks, skip rules or normalisation",
    ]
    # The unchanged scenario is still compared.
    assert {r["scenario"] for r in verdict_table(result.stdout)} == {"steady"}
    assert snapshot(where) == before


def test_a_night_names_the_sampling_setting_that_unmatched_its_baseline(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    """A suite's temperature changed: the night said only "fingerprint a -> b" and exited
    0, however the runs moved (issue 53, row 18)."""
    assert baseline_cmd(lab, where, "--from", str(lab.root / "night1")).exit_code == 0
    scenarios = [scenario(t) for t in TAGS]
    scenarios[TAGS.index("capital")]["temperature"] = 0.8
    write_suite(tmp_path / "warmer", SUITE, scenarios, concurrency=8)
    result = run_cmd(lab, where, tmp_path / "out", suites=tmp_path / "warmer")
    assert result.exit_code == 0, result.output
    assert (
        "note: capital [openai/fake]: its runs sent otherwise than its baseline's: "
        "temperature 0.0 -> 0.8"
    ) in result.stderr.splitlines()
    # The history keeps why, and the report says it on the cell (it showed "no comparison
    # with a baseline" and could not say why).
    (entry,) = read_entries(str(tmp_path / "history"), suites=[SUITE])
    why = entry.not_compared[CellKey("capital", "openai/fake")]
    assert "configuration changed since" in why and "temperature 0.0 -> 0.8" in why
    assert f"evalrunner baseline --suite {SUITE}" in why
    assert CellKey("steady", "openai/fake") not in entry.not_compared
    report = tmp_path / "report"
    shown = evalrunner(
        lab.ep, "report", "--history", str(tmp_path / "history"), "--out", str(report)
    )
    assert shown.exit_code == 0, shown.output
    assert "temperature 0.0 -&gt; 0.8" in (report / "report.html").read_text(encoding="utf-8")
    assert "temperature 0.0 -> 0.8" in (report / "summary.md").read_text(encoding="utf-8")
    # A team that wants such a night to fail says so.
    strict = run_cmd(
        lab, where, tmp_path / "strict", "--fail-on-unmatched", suites=tmp_path / "warmer"
    )
    assert strict.exit_code == 1, strict.output
    assert strict.stderr.splitlines()[-1] == (
        "exit 1: 1 scenario x models were not compared: their baseline is for another "
        "configuration or model (--fail-on-unmatched)"
    )


# --------------------------------------------------- building baselines: refusals write nothing


def test_append_onto_a_baseline_of_another_configuration_is_refused(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    assert baseline_cmd(lab, where, "--from", str(lab.root / "night1")).exit_code == 0
    before = snapshot(where)
    # 'steady' changed; 'capital' did not and sorts first: neither file may be written.
    edited = edited_suite(lab, tmp_path, "steady")
    lab.world.reseed(5)
    night = lab.night(str(tmp_path / "edited-night"), 3, "--suites-dir", str(edited))
    result = baseline_cmd(lab, where, "--from", str(night), "--append", suites=edited)
    assert result.exit_code == 2, result.output
    assert one_error(result) == (
        f"error: {file_of(where, 'steady')}: recorded for another configuration or model; rebuild it without --append"
    )
    assert snapshot(where) == before
    # Without --append the new configuration replaces both files.
    assert baseline_cmd(lab, where, "--from", str(night), suites=edited).exit_code == 0
    assert (
        load_baseline(file_of(where, "steady")).fingerprint
        != json.loads(before[file_of(where, "steady")])["fingerprint"]
    )


def test_a_night_run_with_another_configuration_is_refused(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    assert baseline_cmd(lab, where, "--from", str(lab.root / "night1")).exit_code == 0
    before = snapshot(where)
    # night2 ran before 'steady' was edited: it is no sample of the edited scenario.
    edited = edited_suite(lab, tmp_path, "steady")
    lab.world.reseed(6)
    fresh = lab.night(str(tmp_path / "edited-night"), 3, "--suites-dir", str(edited))
    # Alone, or pooled with a night of the edited suite (listed last), with or without --append.
    for extra in ((), ("--append",), ("--from", str(fresh)), ("--from", str(fresh), "--append")):
        result = baseline_cmd(lab, where, "--from", str(lab.root / "night2"), *extra, suites=edited)
        assert result.exit_code == 2, result.output
        line = one_error(result)
        assert line.startswith(
            f"error: {lab.root / 'night2'}: scenario 'steady' ran with another configuration"
        )
        assert line.endswith("run it again before making it the baseline")
        assert snapshot(where) == before


def test_from_a_results_dir_of_another_suite_is_refused(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    other = make_suite(tmp_path / "suites", "other", ["capital"])
    result = evalrunner(
        lab.ep,
        "run",
        "--suite",
        "other",
        "--suites-dir",
        str(other.parent),
        "--runs",
        "2",
        "--out",
        str(tmp_path / "other-night"),
        "--no-history",
        "--no-compare",
    )
    assert result.exit_code == 0, result.output
    result = baseline_cmd(
        lab, where, "--from", str(lab.root / "night1"), "--from", str(tmp_path / "other-night")
    )
    assert result.exit_code == 2, result.output
    assert (
        one_error(result)
        == f"error: {tmp_path / 'other-night'}: holds suite 'other', not '{SUITE}'"
    )
    assert not where.exists()
    # A directory that is no results directory at all.
    (tmp_path / "empty").mkdir()
    result = baseline_cmd(lab, where, "--from", str(tmp_path / "empty"))
    assert result.exit_code == 2
    assert (
        one_error(result)
        == f"error: {tmp_path / 'empty' / 'manifest.json'}: results manifest not found"
    )
    assert not where.exists()


def test_the_same_night_given_twice_is_refused_and_nothing_is_written(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    # Three copies of one night would pass for three nights: a baseline old enough to gate.
    night = lab.root / "night1"
    copy = shutil.copytree(night, tmp_path / "copy-of-night1")
    for second in (night, copy):
        result = baseline_cmd(lab, where, "--from", str(night), "--from", str(second))
        assert result.exit_code == 2, result.output
        line = one_error(result)
        assert line.startswith(f"error: {second}: the same night as {night} (started ")
        assert line.endswith("the same runs); a baseline counts each night once: give it once")
        assert not where.exists()


@pytest.mark.parametrize("status", ["interrupted", "running"])
def test_an_unfinished_night_is_refused_with_how_to_finish_it(
    lab: Lab, where: Path, tmp_path: Path, status: str
) -> None:
    night = shutil.copytree(lab.root / "night1", tmp_path / "cut-short")
    manifest = night / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"finished"', f'"{status}"'))
    result = baseline_cmd(lab, where, "--from", str(lab.root / "night2"), "--from", str(night))
    assert result.exit_code == 2, result.output
    assert one_error(result) == (
        f"error: {night}: its night is not finished (manifest status '{status}'), and a "
        f"baseline accepts whole nights: finish it with evalrunner run --suite {SUITE} "
        f"--suites-dir {lab.suites} --out {night} --resume --no-compare --no-history, or leave "
        "it out"
    )
    assert not where.exists()


def test_a_finished_night_missing_a_run_file_is_refused_by_baseline_compare_and_explain(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    # Read as it was, the night passed for one of fewer runs: a baseline, a comparison and
    # an explanation resting on part of a night, and nothing said.
    night = shutil.copytree(lab.root / "night1", tmp_path / "damaged")
    manifest = json.loads((night / "manifest.json").read_text())
    gone = ResultsDir(night).run_path(sorted(manifest["run_ids"])[0])
    gone.unlink()
    listed = len(set(manifest["run_ids"]))
    expected = (
        f"error: {gone}: missing, though manifest.json lists it among the runs of this "
        f"finished night (1 of {listed} run files missing); restore the directory from its "
        "copy, or run the night again"
    )
    suite = ("--suite", SUITE, "--suites-dir", str(lab.suites), "--baselines", str(where))
    commands = [
        ("baseline", *suite, "--from", str(night)),
        ("compare", str(lab.root / "night2"), str(night)),
        ("explain", *suite, "--results", str(night)),
    ]
    for args in commands:
        result = evalrunner(lab.ep, *args)
        assert result.exit_code == 2, (args[0], result.output)
        assert one_error(result) == expected, args[0]
    assert not where.exists()


def test_a_baselines_directory_that_cannot_be_written_is_one_line(lab: Lab) -> None:
    where = Path("/sys/evalrunner-baselines")  # refused to every user, root included
    result = baseline_cmd(lab, where, "--from", str(lab.root / "night1"))
    assert result.exit_code == 2, result.output
    assert one_error(result).startswith(f"error: {where}: ")
    assert not where.exists()


def test_two_nights_that_started_in_the_same_second_are_two_nights(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    # Two shards of one nightly job (two --out directories) can start in the same second.
    shard = shutil.copytree(lab.root / "night2", tmp_path / "shard")
    started = ResultsDir(lab.root / "night1").read_manifest().started_at
    manifest = ResultsDir(shard).read_manifest()
    (shard / "manifest.json").write_text(
        json.dumps(manifest.model_copy(update={"started_at": started}).model_dump(mode="json"))
    )
    result = baseline_cmd(lab, where, "--from", str(lab.root / "night1"), "--from", str(shard))
    assert result.exit_code == 0, result.output
    assert len(load_baseline(file_of(where, "capital")).nights) == 2


def test_nights_run_back_to_back_inside_one_second_are_still_three_nights(
    lab: Lab, where: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 'steady' cell's runs are the same every night, and starts are kept to the
    second: three nights of it inside one second read as one night three times, and
    `baseline --nights 3` failed in CI with a traceback. The clock here stands still
    unless the command waits."""
    frozen = [clock.parse("2026-12-08T02:00:00Z")]
    monkeypatch.setattr(clock, "now", lambda: frozen[0])
    monkeypatch.setattr(
        time, "sleep", lambda s: frozen.__setitem__(0, frozen[0] + dt.timedelta(seconds=s))
    )
    made = baseline_cmd(lab, where, "--runs", "2", "--nights", "3", "--out", str(tmp_path / "n"))
    assert made.exit_code == 0, made.output
    nights = load_baseline(file_of(where, "steady")).nights
    assert len({n.started_at for n in nights}) == 3


def test_one_cell_s_runs_twice_under_one_start_is_one_line_and_nothing_written(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    """Two directories that started in the same second, each holding the same run of one
    cell (the same scenario run twice in parallel, its agent deterministic): they differ as
    nights, so `--from` takes both, but the cell's baseline would count one night twice.
    Refused in one line naming the file, not with the baseline file's ValidationError."""
    shard = shutil.copytree(lab.root / "night1", tmp_path / "shard")
    moved = next((shard / "runs").glob("capital/**/*.json"))
    doc = json.loads(moved.read_text())
    doc["record"]["latency_s"] = float(doc["record"].get("latency_s") or 0.0) + 1.0
    moved.write_text(json.dumps(doc))
    result = baseline_cmd(lab, where, "--from", str(lab.root / "night1"), "--from", str(shard))
    assert result.exit_code == 2, result.output
    line = one_error(result)
    assert line.startswith(f"error: {file_of(where, 'steady')}: ")
    assert (
        "(started " in line
        and ", from shard) is an earlier night again (night 0, from night1)" in line
    )
    assert not where.exists()


def test_a_night_the_endpoint_failed_is_refused_as_a_baseline_night(
    lab: Lab, where: Path, tmp_path: Path
) -> None:
    # Accepted as it was, an outage night replaced a good baseline with one of no runs
    # (exit 0), and appended it counted towards the nights a baseline needs to gate. The
    # command offered carries the locations given (it went to ./baselines without them).
    def night(out: Path, reply: Any) -> None:
        with FakeEndpoint(responder=reply) as ep:
            result = evalrunner(
                ep,
                *("run", "--suite", SUITE, "--suites-dir", str(lab.suites), "--runs", "2"),
                *("--out", str(out), "--no-history", "--no-compare"),
            )
        assert result.exit_code in (0, 1, 3), result.output

    down, half = tmp_path / "down", tmp_path / "half"
    night(down, lambda body, n: Fault("503"))
    # One scenario's runs all failed at the endpoint, the other's passed: not an outage
    # (half the runs), but nothing measured that scenario.
    night(half, lambda body, n: Fault("503") if "[steady]" in str(body) else lab.world(body, n))
    expected = {
        down: (
            f"error: {down}: an outage night (4 of 4 runs ended in infra_error, more than 50%): "
            "the endpoints failed, not the agent; a baseline accepts nights that measured the "
            "agent: leave it out, and run the night again once they answer"
        ),
        half: (
            f"error: {half}: steady [openai/fake]: all 2 runs ended in infra_error, so nothing "
            "measured the agent there; a baseline accepts nights that measured the agent: "
            f"accept the other scenarios' runs with evalrunner baseline --suite {SUITE} "
            f"--suites-dir {lab.suites} --baselines {where} --from {half} --scenario capital, "
            "or leave the night out"
        ),
    }
    baseline_cmd(lab, where, "--from", str(lab.root / "night1"))
    before = {p: p.read_bytes() for p in where.rglob("*.json")}
    for source, line in expected.items():
        for more in ((), ("--append",)):
            result = baseline_cmd(lab, where, "--from", str(source), *more)
            assert result.exit_code == 2, result.output
            assert one_error(result) == line
            assert {p: p.read_bytes() for p in where.rglob("*.json")} == before
    # The command the message gives accepts the scenario the endpoint answered for.
    result = baseline_cmd(lab, where, "--from", str(half), "--scenario", "capital", "--append")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["wrote", str(file_of(where, "capital"))]
    # A night run for the baseline during an outage says that nothing was written (it
    # ended on the night's own outage line, exit 3, and left that to be guessed).
    before = {p: p.read_bytes() for p in where.rglob("*.json")}
    with FakeEndpoint(responder=lambda body, n: Fault("503")) as ep:
        result = evalrunner(
            ep,
            *("baseline", "--suite", SUITE, "--suites-dir", str(lab.suites)),
            *("--baselines", str(where), "--runs", "1", "--out", str(tmp_path / "n3")),
        )
    assert result.exit_code == 3, result.output
    assert (
        f"no baseline written: the night was an outage; its runs are in {tmp_path / 'n3'}, "
        "the baselines as they were"
    ) in result.stderr
    assert {p: p.read_bytes() for p in where.rglob("*.json")} == before
    assert (
        where.joinpath(SUITE, "steady--openai_fake.json").read_bytes()
        == before[file_of(where, "steady")]
    )


def test_a_model_or_scenario_the_nights_did_not_run_is_one_line(lab: Lab, where: Path) -> None:
    # --model and --scenario with --from choose the cells to accept (before: refused as
    # "shape a live run", and a multi-model night could only be accepted whole).
    night = lab.root / "night1"
    for flag, value, held in (
        ("--model", "openai/nope", "openai/fake"),
        ("--scenario", "capitl", "capital, steady"),
    ):
        result = baseline_cmd(lab, where, "--from", str(night), flag, value)
        assert result.exit_code == 2, result.output
        what = flag.removeprefix("--")
        assert one_error(result) == (
            f"error: {night}: holds no runs of {what} {value!r}; it has {held}"
        )
        assert not where.exists()
    result = baseline_cmd(lab, where, "--from", str(night), "--scenario", "steady")
    assert result.exit_code == 0, result.output
    assert [p.name for p in where.rglob("*.json")] == ["steady--openai_fake.json"]


def test_a_night_of_a_model_without_baselines_names_the_models_that_have_them(
    lab: Lab, where: Path
) -> None:
    # Before: "no baselines yet", though the suite had baselines for another model.
    assert baseline_cmd(lab, where, "--from", str(lab.root / "night1")).exit_code == 0
    result = evalrunner(
        lab.ep,
        *("run", "--suite", SUITE, "--suites-dir", str(lab.suites), "--runs", "2"),
        *("--model", "openai/other", "--baselines", str(where), "--no-history"),
        *("--out", str(lab.root / "other")),
    )
    assert result.exit_code == 0, result.output
    last = result.stderr.strip().splitlines()[-1]
    counts, _, rest = last.partition("); ")  # "night: 4 runs (3 passed, 1 failed"
    assert counts.startswith("night: 4 runs (")
    assert rest == (
        "no baseline for tonight's models yet (the suite's baselines are for openai/fake), so "
        "nothing was compared. Next, to make this night theirs: evalrunner baseline --suite "
        f"{SUITE} --suites-dir {lab.suites} --baselines {where} --from {lab.root / 'other'}"
    )


def test_a_first_baseline_that_gates_in_one_command(lab: Lab, where: Path, tmp_path: Path) -> None:
    """docs/adopt.md's first baseline held one night; three are needed to gate, so every
    night after it flagged nothing, silently (issue 54, A2). `--nights 3` runs three and
    accepts them together; a baseline too young to gate says so when it is written."""
    young = baseline_cmd(lab, where, "--runs", "2", "--out", str(tmp_path / "one"))
    assert young.exit_code == 0, young.output
    assert (
        "note: these baselines hold 1 night; a scenario gates once its baseline holds 3 "
        "(min_baseline_nights), so until then a night flags nothing"
    ) in young.stderr
    made = baseline_cmd(lab, where, "--runs", "2", "--nights", "3", "--out", str(tmp_path / "n"))
    assert made.exit_code == 0, made.output
    assert "these baselines hold" not in made.stderr
    assert [p.name for p in sorted(tmp_path.glob("n-*"))] == ["n-1", "n-2", "n-3"]
    assert len(load_baseline(file_of(where, "capital")).nights) == 3
    night = run_cmd(lab, where, tmp_path / "gated")
    assert night.exit_code == 0, night.output
    assert "too young" not in night.stderr  # it gates from the first night after it
    refused = baseline_cmd(lab, where, "--from", str(tmp_path / "n-1"), "--nights", "2")
    assert refused.exit_code == 2 and "--nights shapes a live run" in refused.output
