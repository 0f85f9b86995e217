"""JUnit XML of the latest night, for CI test tabs: one testcase per scenario x model.

A gating regression is a ``<failure>``; ``<skipped>`` when no gating metric
reached a decision (all inconclusive, no baseline, not compared), because CI should
show "not evaluated" rather than a pass it cannot vouch for; otherwise a pass
(improvements and diagnostics regressions included, named in system-out). A scenario
x model the latest night did not run is no testcase (it is no test of the suite now):
the testsuite's system-out names it. ElementTree escapes markup; characters XML 1.0
cannot carry become U+FFFD.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence

from evalrunner.history._store import History
from evalrunner.report._format import evidence_line, pct
from evalrunner.report._select import SuiteSelection, select
from evalrunner.report._verdicts import NOT_COMPARED, VERDICT_TEXT
from evalrunner.report._views import CellView, absent_line, cell_views
from evalrunner.stats._metric_result import FAILING, UNCONFIRMED, MetricResult

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_COUNTS = ("tests", "failures", "skipped")


def xml(text: str) -> str:
    """Characters XML 1.0 cannot carry (control characters) become U+FFFD."""
    return _XML_BAD.sub("\ufffd", text)


def render_junit(
    history: History,
    *,
    suites: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> str:
    """JUnit XML of the latest night: one testcase per scenario x model.

    ``classname`` is ``<suite>.<scenario>`` and ``name`` the model. A gating
    regression is a ``<failure>`` naming the metrics; a testcase whose gating
    metrics are all inconclusive (or that has no baseline) is ``<skipped>``.
    """
    root = ET.Element("testsuites", name="evalrunner")
    totals = Counter[str]()
    for suite in select(history, suites, models, since, until):
        totals += _suite(root, suite)
    for name in _COUNTS:
        root.set(name, str(totals[name]))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite(root: ET.Element, suite: SuiteSelection) -> Counter[str]:
    node = ET.SubElement(root, "testsuite", name=xml(suite.name), timestamp=suite.night.created_at)
    counts = Counter[str]()
    for v in cell_views(suite):
        counts["tests"] += 1
        broken = [b for b in suite.night.broken_checks if b.startswith(f"scenario {v.scenario}:")]
        counts[_case(node, suite.name, v, broken=broken)] += 1
    absent = absent_line(suite)
    if absent:
        ET.SubElement(node, "system-out").text = xml(absent)
    for name in _COUNTS:
        node.set(name, str(counts[name]))
    node.set("errors", "0")
    return counts


def _case(node: ET.Element, suite: str, v: CellView, *, broken: Sequence[str] = ()) -> str:
    """Add the testcase of ``v``; return how it ended: 'failures', 'skipped' or 'passed'."""
    case = ET.SubElement(
        node,
        "testcase",
        classname=xml(f"{suite}.{v.scenario}"),
        name=xml(v.model),
        time=f"{v.latency:.3f}",
    )
    ended = _verdict(case, v)
    out = [f"night {v.night}: success {pct(v.success)}, N {v.n_text}, skip {pct(v.skip)}"]
    out += [f"warning: {line}" for line in broken]
    out += [evidence_line(r) for r in v.results if r.verdict != "ok"]
    ET.SubElement(case, "system-out").text = xml("\n".join(out))
    return ended


def _verdict(case: ET.Element, v: CellView) -> str:
    """The testcase's failure or skip, if any; how it ended."""
    gating = v.gating
    regressions = [r for r in gating if r.verdict in FAILING]
    if v.stale:
        # The latest night ran it but did not measure it (an outage, or its model's
        # endpoint failed): its last measured night's verdicts would pass a night that
        # tested nothing.
        message = f"{v.stale_why}; the verdicts below are of night {v.night}"
        ET.SubElement(case, "skipped", message=xml(message))
        return "skipped"
    if regressions:
        _failure(case, v, regressions)
        return "failures"
    if not gating or all(r.verdict == "inconclusive" for r in gating):
        ET.SubElement(case, "skipped", message=xml(f"{_undecided(v)} (N {v.n_text})"))
        return "skipped"
    return "passed"


def _failure(case: ET.Element, v: CellView, regressions: Sequence[MetricResult]) -> None:
    """The ``<failure>`` of a testcase whose gating metrics regressed: names, evidence, rows."""
    failure = ET.SubElement(
        case,
        "failure",
        type="regression",
        message=xml(
            "regression in "
            + ", ".join(r.metric for r in regressions)
            + (f"; {v.cause}" if v.cause else "")
        ),
    )
    moved = [f"row {line}" for line in (v.why.rows if v.why else [])]
    failure.text = xml("\n".join([*(evidence_line(r) for r in regressions), *moved]))


def _undecided(v: CellView) -> str:
    """Why a case decided nothing, naming the changes it could not confirm."""
    why = "all gating metrics inconclusive" if v.gating else "nothing gating (a young baseline?)"
    if not v.results:
        why = "no baseline comparison"
    if v.last_compared:
        why = f"{VERDICT_TEXT[NOT_COMPARED]}; {v.last_compared.text}"
    if v.why_not_compared:
        why += f": {v.why_not_compared}"
    unconfirmed = [r.metric for r in v.results if r.unconfirmed]
    if unconfirmed:
        why += f"; {UNCONFIRMED}: {', '.join(unconfirmed)}"
    return why
