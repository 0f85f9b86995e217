"""JUnit XML: a failure per gating regression, skipped when nothing was decided, well-formed whatever the names."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from report_pages import EVIL_MODEL, latest_gating

from evalrunner.history._store import History
from evalrunner.report._junit import render_junit
from evalrunner.stats._metric_result import FAILING


def test_junit_counts_and_failures(history: History) -> None:
    root = ET.fromstring(render_junit(history))
    latest = latest_gating(history)
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(latest) == int(root.get("tests", "-1"))
    failing = {key for key, rows in latest.items() if any(r.verdict == "regression" for r in rows)}
    skipped = {
        key for key, rows in latest.items() if all(r.verdict == "inconclusive" for r in rows)
    }
    assert failing
    assert int(root.get("failures", "-1")) == len(failing)
    assert int(root.get("skipped", "-1")) == len(skipped)
    for case in cases:
        suite, scenario = case.get("classname", "").split(".", 1)
        key = (scenario, case.get("name", ""))
        assert suite == "demo"
        failure = case.find("failure")
        assert (failure is not None) == (key in failing)
        assert (case.find("skipped") is not None) == (key in skipped)
        if failure is not None:
            regressed = [r.metric for r in latest[key] if r.verdict in FAILING]
            assert failure.get("message") == "regression in " + ", ".join(regressed)
            assert "q " in (failure.text or "")


def test_junit_escapes_hostile_text(hostile_model: History) -> None:
    text = render_junit(hostile_model)
    assert "<script" not in text
    root = ET.fromstring(text)  # well-formed, control character and all
    names = {case.get("name") for case in root.iter("testcase")}
    assert names == {EVIL_MODEL.replace("\x07", "\ufffd")}


def test_a_skipped_case_names_the_changes_the_night_could_not_confirm(
    unconfirmed: History,
) -> None:
    root = ET.fromstring(render_junit(unconfirmed))
    outputs = "\n".join(s.text or "" for s in root.iter("system-out"))
    assert " changed, unconfirmed: " in outputs
    # Its case's gating metrics are all inconclusive: the skip message names the change.
    messages = [s.get("message", "") for s in root.iter("skipped")]
    assert any("changed but unconfirmed (every run moved): success_rate" in m for m in messages)
