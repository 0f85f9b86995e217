"""Data flows one way: each package imports only the packages below it.

    _jsonio, _redact, _clock, _litellm, errors   (shared plumbing)
    core      capture, ATIF, normalise, shape, diff
    frozen    record/replay, goldens, pytest plugin   (+ live's suite schema for suite items)
    live      suites, runner, results                 (+ stats' metric registry and Tolerance)
    stats     statistics over RunRecords
    baseline  baseline files, comparing a night
    report    history and reports
    cli       the command line, over all of them

``live._night`` (``run_live``: run, then compare, then append to the history) is
the one orchestrator inside live and may import what a whole night needs.
``live._command`` runs a scenario's ``command:`` under the capture proxy, the
one place live reaches up to it (lazily: the proxy uses live's endpoints);
``frozen._proxied`` runs SDK and command agents in frozen mode through it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from paths import REPO

PLUMBING = {"_jsonio", "_redact", "_clock", "_litellm", "errors"}
ALLOWED: dict[str, set[str]] = {
    "plumbing": PLUMBING,
    "core": PLUMBING | {"core"},
    "frozen": PLUMBING | {"core", "frozen", "live"},
    "live": PLUMBING | {"core", "live", "stats._metrics", "stats._tolerance"},
    "live._night": PLUMBING | {"core", "live", "stats", "baseline", "report"},
    "live._command": PLUMBING | {"core", "live", "proxy"},
    "frozen._proxied": PLUMBING | {"core", "frozen", "live", "proxy"},
    "stats": PLUMBING | {"stats", "live._record"},
    "baseline": PLUMBING | {"core", "live", "stats", "baseline"},
    "report": PLUMBING | {"core", "live", "stats", "baseline", "report"},
    "cli": PLUMBING | {"core", "frozen", "live", "stats", "baseline", "report", "cli", "proxy"},
    "proxy": PLUMBING | {"core", "frozen", "live", "proxy"},
    "examples": PLUMBING | {"core", "live", "reference_agent"},
}


def _layer(path: Path) -> str:
    parts = path.relative_to(REPO / "evalrunner").with_suffix("").parts
    if len(parts) == 1:
        name = parts[0]
        if name in PLUMBING or name == "__init__":
            return "plumbing" if name != "__init__" else "top"
        return "examples"  # examples.py, reference_agent.py: agents, at the edge
    if parts[:2] in (("live", "_night"), ("live", "_command"), ("frozen", "_proxied")):
        return ".".join(parts[:2])
    return parts[0]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("evalrunner")
        ):
            parts = node.module.split(".")[1:]
            if not parts:  # from evalrunner import x
                found |= {alias.name for alias in node.names}
            else:
                found.add(".".join(parts[:2]))
    return found


def _allowed(target: str, allowed: set[str]) -> bool:
    return target in allowed or target.split(".")[0] in allowed or target == "__version__"


FILES = sorted((REPO / "evalrunner").rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_imports_follow_the_layers(path: Path) -> None:
    layer = _layer(path)
    if layer == "top":
        return  # the public API re-exports from everywhere
    bad = sorted(t for t in _imports(path) if not _allowed(t, ALLOWED[layer]))
    assert bad == [], f"{layer} must not import {bad}"
