"""The reports rendered from the run history (HTML trend report, Markdown summary, JUnit XML).

Data flows one way: :mod:`evalrunner.history` (typed entries on disk) -> ``_select`` (suites,
models, time window -> nights) -> ``_views`` (per scenario x model) and ``_suite_view`` (the
HTML page's sections, with ``_charts`` drawing through ``_svg``) -> one module per format
(``_html`` with ``templates/``, ``_markdown``, ``_junit``); ``_report.write_report`` writes
all three.
``_format`` and ``_verdicts`` say how numbers and verdicts read in every format.
"""

from evalrunner.report._html import render_html
from evalrunner.report._junit import render_junit
from evalrunner.report._markdown import render_markdown
from evalrunner.report._report import write_report

__all__ = [
    "render_html",
    "render_junit",
    "render_markdown",
    "write_report",
]
