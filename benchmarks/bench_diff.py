"""What a behaviour-change message costs and how big it gets: ``render`` and ``summary``
before and after the bounded, block-by-block diff.

Trajectories of 10, 108 and 2,000 steps (``bench_core.synthetic``: agent turns
with 1-3 tool calls, sub-agents), each compared with itself after one change
made to the raw capture before normalising, as a real re-run would: a step in
the middle removed (later step ids and call ids shift), or a step's message
changed, or a tool call's argument replaced by an 8,000-item list. For each, the time
of ``render`` (best of ``--repeat``; the old one
runs once at 2,000 steps, it takes seconds), its longest line and line count,
and the length of ``summary``. "before" is the render of commit 6b2ab4a, kept
below verbatim (one unified diff of the whole pretty JSON, unbounded delta text).
Target: render under 0.5 s at 2,000 steps.

    python benchmarks/bench_diff.py
    python benchmarks/bench_diff.py --steps 10 108 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import copy
import difflib
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from bench_core import synthetic

from evalrunner._jsonio import dumps
from evalrunner.core._diff import Delta, diff, render, summary
from evalrunner.core._normalize import normalize

TARGET_S = 0.5
BIG_ITEMS = 8_000
"""The "8k-item argument" case: capping its added lines was quadratic (144 s; issue 53)."""


# -- before: commit 6b2ab4a's render and summary -----------------------------------------


def _fmt_before(value: Any) -> str:
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) for v in value):
        return (
            "(" + ", ".join(_fmt_before(v) for v in value) + ("," if len(value) == 1 else "") + ")"
        )
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value) if isinstance(value, str) else str(value)


def _delta_before(d: Delta) -> str:
    return f"{d.field}: {_fmt_before(d.golden)} -> {_fmt_before(d.actual)}"


def summary_before(deltas: list[Delta]) -> str:
    return ", ".join(_delta_before(d) for d in deltas) if deltas else "no behavioural change"


def render_before(golden: Mapping[str, Any], actual: Mapping[str, Any], deltas: list[Delta]) -> str:
    context, max_lines = 3, 200  # the defaults then and now
    lines = ["Behaviour changed:"] + [f"  {_delta_before(d)}" for d in deltas]
    udiff = list(
        difflib.unified_diff(
            dumps(golden).splitlines(),
            dumps(actual).splitlines(),
            "golden",
            "actual",
            n=context,
            lineterm="",
        )
    )
    if udiff:
        lines.append("")
        lines.extend(udiff[:max_lines])
        if len(udiff) > max_lines:
            lines.append(f"... {len(udiff) - max_lines} more diff lines")
    return "\n".join(lines)


# -- the cases ---------------------------------------------------------------------------


def _renumber(traj: dict[str, Any]) -> dict[str, Any]:
    for i, step in enumerate(traj["steps"], start=1):
        step["step_id"] = i
    return traj


def cases(n_steps: int) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    raw = synthetic(n_steps, seed=1)
    middle = len(raw["steps"]) // 2
    removed = copy.deepcopy(raw)
    del removed["steps"][middle]
    changed = copy.deepcopy(raw)
    changed["steps"][middle]["message"] += " (and one more thing)"
    big = copy.deepcopy(raw)
    calls = [s for s in big["steps"][middle:] if s.get("tool_calls")]
    if calls:  # a tool call given an 8,000-item argument: rendered line by line
        calls[0]["tool_calls"][0]["arguments"] = {"rows": [{"k": i} for i in range(BIG_ITEMS)]}
    golden = normalize(raw)
    return {
        "one step removed": (golden, normalize(_renumber(removed))),
        "one step changed": (golden, normalize(changed)),
        "8k-item argument": (golden, normalize(big)),
    }


def best(fn: Callable[[], str], repeat: int) -> tuple[float, str]:
    times, text = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        text = fn()
        times.append(time.perf_counter() - start)
    return min(times), text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="*", default=[10, 108, 2000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    print(
        f"{'steps':>6} {'case':<17} {'render s':>19} {'longest line':>15} "
        f"{'lines':>11} {'summary chars':>17}"
    )
    print(
        f"{'':>6} {'':<17} {'before':>9} {'after':>9} {'before':>7} {'after':>7} "
        f"{'before':>5} {'after':>5} {'before':>8} {'after':>8}"
    )
    worst = 0.0
    for n in args.steps:
        for name, (golden, actual) in cases(n).items():
            deltas = diff(golden, actual)
            old_repeat = 1 if n > 500 else args.repeat
            t_old, old = best(
                lambda g=golden, a=actual, d=deltas: render_before(g, a, d), old_repeat
            )
            t_new, new = best(lambda g=golden, a=actual, d=deltas: render(g, a, d), args.repeat)
            worst = max(worst, t_new) if n >= 2000 else worst
            print(
                f"{n:>6} {name:<17} {t_old:>9.4f} {t_new:>9.4f} "
                f"{max(map(len, old.splitlines())):>7,} {max(map(len, new.splitlines())):>7,} "
                f"{len(old.splitlines()):>5} {len(new.splitlines()):>5} "
                f"{len(summary_before(deltas)):>8,} {len(summary(deltas)):>8,}"
            )
    print(f"target: render < {TARGET_S} s at 2,000 steps: {'ok' if worst < TARGET_S else 'OVER'}")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
