"""The package's cyclomatic complexity (radon) and module lengths: one home for the measurement,
read by ``tests/meta/test_complexity.py`` and printed by ``benchmarks/complexity.py``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_visit

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "evalrunner"


@dataclass(frozen=True)
class Scored:
    """One function or method and its cyclomatic complexity."""

    path: Path  # relative to the repository root
    lineno: int
    name: str  # Class.method for methods
    complexity: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.lineno}:{self.name}"


def modules(root: Path = PACKAGE) -> list[Path]:
    """Every Python module of the package, in a stable order."""
    return sorted(root.rglob("*.py"))


def functions(root: Path = PACKAGE) -> list[Scored]:
    """Every function and method of the package with its complexity, each once."""
    scored: dict[tuple[Path, int, str], Scored] = {}
    for path in modules(root):
        source = path.read_text(encoding="utf-8")
        rel = path.relative_to(REPO)
        for block in cc_visit(source):
            # radon lists a class's methods both on their own and under the class: keep one.
            for item in [block, *getattr(block, "methods", [])]:
                if type(item).__name__ == "Class":
                    continue
                key = (rel, item.lineno, item.fullname)
                scored[key] = Scored(rel, item.lineno, item.fullname, item.complexity)
    return list(scored.values())


def module_lengths(root: Path = PACKAGE) -> dict[Path, int]:
    """Lines per module, relative to the repository root."""
    return {
        path.relative_to(REPO): len(path.read_text(encoding="utf-8").splitlines())
        for path in modules(root)
    }
