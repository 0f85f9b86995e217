"""Whatever a model or tool wrote reaches the HTML page as text: never markup, script or template."""

from __future__ import annotations

import re

from history_factory import HOSTILE_TOOL

from evalrunner.history._store import History
from evalrunner.report._html import render_html


def test_hostile_model_output_is_escaped(hostile: History) -> None:
    page = render_html(hostile)
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "onerror=" not in page.replace("onerror=&#34;", "")  # only ever as escaped text
    assert "<svg onload" not in page
    assert "</pre></div></details></td>" not in page
    escaped = "&lt;script&gt;window.__pwned=1&lt;/script&gt;"
    assert page.count(escaped) >= 2  # skip reason, final answer (in a metric's note)
    diff = re.search(r'<pre class="diff">(.*?)</pre>', page, re.S)
    assert diff is not None  # the hostile scenario regressed: its trajectory diff is shown...
    assert "&lt;svg onload=\\&#34;window.__pwned=1\\&#34;&gt;tool" in diff.group(1)  # ...escaped
    assert (
        "&lt;svg onload=&#34;window.__pwned=1&#34;&gt;tool" in page
    )  # tool name: bars, metric names
    assert "{{ 7*7 }}" in page  # shown as written, never evaluated


def test_hostile_tool_name_in_svg_labels_is_escaped(hostile: History) -> None:
    page = render_html(hostile, chart_diagnostics=[f"tool_used:{HOSTILE_TOOL}"])
    labels = re.findall(r'aria-label="([^"]*)"', page)
    assert any(
        "tool_used:&lt;svg onload=&#34;window.__pwned=1&#34;&gt;tool" in label for label in labels
    )


def test_hostile_model_name_is_escaped_in_html(hostile_model: History) -> None:
    page = render_html(hostile_model)
    assert "<script" not in page
    assert "evil|&lt;script&gt;window.__pwned=1&lt;/script&gt;&#34;&amp;" in page
    assert "Behaviour changed:" in page  # the typical trajectories were found under the hostile key
