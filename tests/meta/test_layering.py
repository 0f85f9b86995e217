"""Data flows one way: each layer imports only the layers it names, all of them below it.

The layers, bottom up (docs/architecture.md draws them):

    plumbing   _jsonio, _redact, _clock, _heap, _lazy, _litellm, _net, _next, _signals, _version,
               errors
    core       capture, ATIF, normalise, shape, diff, the request key
    suite      suite files, the agent contract, run records, metrics, Tolerance
    endpoints  model strings, the embedded model's server
    stats      statistics over run records
    proxy      the capture proxy
    live       the run schedule, executors (local, Ray), command agents, results files
    frozen     record/replay, goldens, the pytest plugin
    history    the run history (JSON/Parquet), evidence across nights
    baseline   baseline files, comparing a night with them
    night      one night end to end, and planning one
    report     HTML / Markdown / JUnit from the history
    agents     examples.py and reference_agent.py: agents, at the edge
    cli        one module per command

There are no per-module exceptions: a module that needs something from a layer
it may not import is in the wrong layer, or the thing it needs is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from paths import REPO

PLUMBING = (
    "_jsonio",
    "_redact",
    "_clock",
    "_heap",
    "_lazy",
    "_litellm",
    "_net",
    "_next",
    "_signals",
    "_version",
    "errors",
)
AGENTS = ("examples", "reference_agent")

# Each layer and the layers it may import (plumbing always, and itself).
LAYERS: list[tuple[str, set[str]]] = [
    ("plumbing", set()),
    ("core", set()),
    ("suite", {"core"}),
    ("endpoints", {"suite"}),
    ("stats", {"suite"}),
    ("proxy", {"core", "suite", "endpoints"}),
    ("live", {"core", "suite", "endpoints", "proxy"}),
    ("frozen", {"core", "suite", "endpoints", "proxy"}),
    ("history", {"suite", "stats", "live"}),
    ("baseline", {"core", "suite", "endpoints", "stats", "live"}),
    ("night", {"core", "suite", "endpoints", "stats", "live", "history", "baseline"}),
    ("report", {"core", "suite", "stats", "history"}),
    ("agents", {"core", "suite"}),
    (
        "cli",
        {
            "core",
            "suite",
            "endpoints",
            "stats",
            "proxy",
            "live",
            "frozen",
            "history",
            "baseline",
            "night",
            "report",
        },
    ),
]
ORDER = [name for name, _ in LAYERS]
MAY_IMPORT = {name: below | {name, "plumbing"} for name, below in LAYERS}


def _layer_of_module(parts: tuple[str, ...]) -> str:
    """The layer of ``evalrunner.<parts>``; "top" for the package itself."""
    if not parts:
        return "top"
    if parts[0] in PLUMBING:
        return "plumbing"
    if parts[0] in AGENTS:
        return "agents"
    return parts[0]


def _layer(path: Path) -> str:
    parts = path.relative_to(REPO / "evalrunner").with_suffix("").parts
    return _layer_of_module(() if parts == ("__init__",) else parts)


def _imports(path: Path) -> set[str]:
    """The layers this file imports from (at any depth: in functions, under TYPE_CHECKING)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = node.module.split(".")
        elif isinstance(node, ast.Import):
            found |= {
                _layer_of_module(tuple(a.name.split(".")[1:]))
                for a in node.names
                if a.name.split(".")[0] == "evalrunner"
            }
            continue
        else:
            continue
        if names[0] != "evalrunner":
            continue
        if len(names) == 1:  # from evalrunner import x: x is a module or a top-level name
            found |= {_layer_of_module((alias.name,)) for alias in node.names}
        else:
            found.add(_layer_of_module(tuple(names[1:])))
    return found


FILES = sorted((REPO / "evalrunner").rglob("*.py"))


def test_every_layer_imports_only_layers_below_it() -> None:
    for name, below in LAYERS:
        assert below <= set(ORDER[: ORDER.index(name)]), f"{name} names a layer above it"


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in (REPO / "evalrunner").iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(ORDER), f"not in LAYERS: {sorted(packages - set(ORDER))}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_imports_follow_the_layers(path: Path) -> None:
    layer = _layer(path)
    if layer == "top":
        return  # the public API re-exports from everywhere
    bad = sorted(_imports(path) - MAY_IMPORT[layer])
    assert bad == [], f"{layer} must not import {bad}"


def test_no_module_imports_the_top_level_package() -> None:
    for path in FILES:
        if _layer(path) != "top":
            assert "top" not in _imports(path), f"{path.relative_to(REPO)} imports evalrunner"


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports by name (packages' re-exports are not edges)."""
    modules = {".".join(p.relative_to(REPO).with_suffix("").parts): p for p in FILES}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {
            node.module
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module in modules
            and node.module != name
        }
    return graph


def test_no_module_circle() -> None:
    graph = _module_graph()
    state: dict[str, str] = {}  # "open" while on the current path, "done" after

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "open":
            loop = path[path.index(name) :]
            raise AssertionError(f"module circle: {' -> '.join([*loop, name])}")
        if state.get(name) == "done":
            return
        state[name] = "open"
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        state[name] = "done"

    for name in sorted(graph):
        visit(name, [])
