"""How long ``redact`` takes on a large history-like object, next to another version of it.

Redaction runs on everything evalrunner writes (recordings, goldens, results,
history, reports), so it must stay cheap. The object is one night of a
50-scenario suite, 10 runs each (``tests/support/history_factory.py``, dumped as
the history file would be: ``HistoryEntry.model_dump(mode="json")``), plus a
1,000-step trajectory like ``benchmarks/bench_core.py``'s. Both are timed with the
working tree's ``evalrunner._redact`` and with ``evalrunner/_redact.py`` as it is
at a git ref (default ``main``), loaded as a standalone module, in one process,
best of several repeats, and printed side by side. Target: within 2x of the ref.

    python benchmarks/bench_redact.py               # against main
    python benchmarks/bench_redact.py --ref HEAD~3  # against any ref
    python benchmarks/bench_redact.py --profile     # plus a cProfile of the current redact
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import pstats
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_core import synthetic  # noqa: E402
from history_factory import build_entries  # noqa: E402

from evalrunner._redact import redact  # noqa: E402

TARGET = 2.0


def module_at(ref: str) -> Any:
    """``evalrunner/_redact.py`` as it is at ``ref``, imported under another name."""
    source = subprocess.run(
        ["git", "show", f"{ref}:evalrunner/_redact.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "redact_at_ref.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("redact_at_ref", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm: compiled patterns, caches
    number = 1
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def strings(obj: Any) -> list[str]:
    """Every string in ``obj``, keys included."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in strings(k) + strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings(v)]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="git ref to compare with (default: main)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)

    (entry,) = build_entries(nights=1, scenarios=50, runs=10)
    night = entry.model_dump(mode="json")
    traj = synthetic(1000)
    objects: dict[str, Any] = {
        "history night (50 x 10 runs)": night,
        "trajectory (1,000 steps)": traj,
        # Every distinct string once: what one pass costs when nothing repeats.
        "distinct strings of both": sorted(set(strings(night) + strings(traj))),
    }
    old = module_at(args.ref)
    print(f"redact: working tree vs {args.ref} (best of {args.repeat}; ratio target <= {TARGET}x)")
    print(f"{'object':<30} {'strings':>8} {'KB':>7} {args.ref:>10} {'now':>10} {'ratio':>6}")
    worst = 0.0
    for label, obj in objects.items():
        then = best(lambda obj=obj: old.redact(obj), args.repeat)
        now = best(lambda obj=obj: redact(obj), args.repeat)
        worst = max(worst, now / then)
        size = len(json.dumps(obj)) / 1024
        print(
            f"{label:<30} {len(strings(obj)):>8} {size:>7.0f} {then * 1000:>8.1f}ms {now * 1000:>8.1f}ms "
            f"{now / then:>5.2f}x"
        )
    print(f"worst ratio {worst:.2f}x ({'within' if worst <= TARGET else 'ABOVE'} {TARGET}x)")
    if args.profile:
        obj = objects["history night (50 x 10 runs)"]
        cProfile.runctx(
            "redact(obj)", globals(), {"obj": obj, "redact": redact}, "/tmp/redact.prof"
        )
        pstats.Stats("/tmp/redact.prof").sort_stats("cumulative").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
