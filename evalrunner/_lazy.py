"""Package exports imported on first use (PEP 562), so importing a package is cheap.

The pytest plugin lives in ``evalrunner.frozen``: every pytest session in a
project that installs evalrunner imports ``evalrunner`` and that package, most
of them never touching a golden. Eager re-exports made each such session load
pydantic models, the suite loader and the live runner (benchmarks/bench_pr.py,
"a plain test, plugin on"). Type checkers still see the real imports, which
each package keeps under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: name -> the module that defines it."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
