"""The attribution lab over many nights: is a flagged change put down to the right cause?

The lab of tests/integration/test_explain_e2e.py (tests/support/explain_lab.py): a
five-scenario suite on a loopback fake endpoint, one scenario per cause. A baseline
of three accepted nights (20 runs each) is built once; then each night injects ONE
cause alone, in its own scenario, and runs the suite through the CLI (``evalrunner
run --runs 20``, escalation on, compared, explained), nights cycling through:

    (a) prompt   a line added to the system prompt          expected: request changed, first action
    (b) schema   the tool's schema takes one more parameter  expected: request changed, after lookup
    (c) model    the endpoint's first answer to the same request moves: model, first action
    (d) tool     the tool answers otherwise for the same arguments: tool, after lookup
    (e) none     nothing changes                             expected: no scenario gets a cause

Per cause it prints the nights, how often the injected scenario failed the night,
and of those: the right cause (and nothing else), a wrong cause among what it said,
unexplained, and the divergence point at the injected action. For (e): scenarios
flagged, and how many of them got a cause.

Then the sentinel alone (``--sentinel-trials``): a fresh baseline of the ``model``
scenario in which the model calls the tool first 9 times in 10 (3 nights x 20 runs),
then ``evalrunner sentinel --calls 20`` against a model that does so 6 times in 10
(power) and one unchanged (false alarms), each trial with fresh draws. It prints both
rates at the sentinel's alpha (0.05) and what one sentinel costs against a night.

    python benchmarks/bench_explain.py --nights 20       # 20 nights per cause, ~10 min
    python benchmarks/bench_explain.py --nights 100 --sentinel-trials 200   # ~45 min
    python benchmarks/bench_explain.py --nights 0 --sentinel-trials 200
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests" / "support")]

from evalrunner._litellm import prepare  # noqa: E402 - after the path setup

NO_CAUSE = ("cause: unexplained", "cause: none found")
"""The lines that name no cause: a divergence later on, or nothing differing."""

prepare()

from baseline_agents import evalrunner  # noqa: E402
from explain_lab import AGENTS, CAUSES, FROM_MEMORY, World, write_lab_suite  # noqa: E402
from fake_endpoint import FakeEndpoint  # noqa: E402

SUITE = "why"
EXPECTED = {
    "prompt": ("request changed (system prompt", "at the first action"),
    "schema": ("request changed (tool 'lookup' schema", "after lookup:"),
    "model": ("model (", "at the first action"),
    "tool": ("tool 'lookup' output changed", "after lookup:"),
}
KINDS = ("request changed", "tool ", "model (")


def inject(cause: str, world: World, seed: int) -> None:
    AGENTS.reset()
    if cause == "prompt":
        AGENTS.system_prompt["prompt"] = FROM_MEMORY
    elif cause == "schema":
        AGENTS.region_schema.add("schema")
    elif cause == "tool":
        AGENTS.tool_answer["tool"] = "Paris (capital since 508)"
    world.night(seed, drifted=cause == "model")


def causes(line: str) -> list[str]:
    """The causes a "cause: a; b" line names (a "; " inside parentheses is one cause's)."""
    parts, depth, current = [], 0, ""
    text = line.removeprefix("cause: ")
    i = 0
    while i < len(text):
        ch = text[i]
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith("; ", i):
            parts.append(current)
            current, i = "", i + 2
            continue
        current += ch
        i += 1
    return [*parts, current]


def why(stdout: str) -> dict[str, list[str]]:
    """Scenario -> the lines the night printed under "Why ..."."""
    lines = stdout.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith("Why the failing")), None)
    said: dict[str, list[str]] = {}
    for line in lines[start + 1 :] if start is not None else []:
        if " × " in line and not line.startswith(" "):
            name = line.split(" × ")[0]
            said[name] = [line.split(": ", 1)[1]]
        elif line.startswith("  ") and said:
            said[name].append(line.strip())
        else:
            break
    return said


def baseline_growth(folder: Path) -> str:
    """How much the traces add to the baseline files (against the same files without them,
    written the way evalrunner writes them)."""
    from evalrunner._jsonio import dumps

    with_traces = without = 0
    for path in sorted(folder.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
        for night in doc["nights"]:
            night.pop("traces", None)
        with_traces += len(text.encode())
        without += len(dumps(doc).encode())
    return f"baseline files: {without} bytes without traces, {with_traces} with: {with_traces / without:.2f}x"


def sentinel_trials(
    cli: Callable[..., tuple[int, str]], world: World, root: Path, runs: int, trials: int
) -> None:
    AGENTS.reset()
    base = []
    for seed in range(3):
        world.night(2000 + seed, answer_first=0.1)
        where = str(root / f"sbase{seed}")
        code, text = cli(
            "run", "--out", where, "--runs", str(runs), "--scenario", "model", "--no-compare"
        )
        assert code == 0, text
        base.append(where)
    code, text = cli("baseline", *(x for b in base for x in ("--from", b)), "--baselines", "sb")
    assert code == 0, text
    found = Counter[str]()
    for trial in range(trials):
        for label, rate in (("moved", 0.4), ("same", 0.1)):
            world.night(30_000 + trial, answer_first=rate)
            code, text = cli(
                "sentinel", "--scenario", "model", "--baselines", "sb", "--calls", "20"
            )
            found[label] += code == 1
            found[f"{label} exit"] += code not in (0, 1)
    print(
        f"sentinel, first action 0.9 -> 0.6, K = 20 calls, baseline 3 x {runs} runs, "
        f"{trials} trials each: detected {found['moved'] / trials:.1%}, "
        f"false alarms when unchanged {found['same'] / trials:.1%} (alpha 0.05); "
        f"other exits {found['moved exit'] + found['same exit']}"
    )
    print(
        f"sentinel cost: 20 calls per cell; a night of this suite at N = {runs} makes about "
        f"{len(CAUSES) * runs * 2} model calls (two per run), so the night's share "
        f"(10 %) allows {len(CAUSES) * runs * 2 // 10 // 20} cell(s) at K = 20"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nights", type=int, default=20, help="Nights per cause.")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sentinel-trials", type=int, default=0, help="Sentinel trials each way.")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-explain-"))
    write_lab_suite(root, SUITE)
    world = World()
    tallies: dict[str, Counter[str]] = {c: Counter() for c in (*EXPECTED, "none")}
    os.chdir(root)  # relative defaults land in the temp dir
    started = time.perf_counter()
    with FakeEndpoint(responder=world) as ep:

        def cli(*argv: str) -> tuple[int, str]:
            result = evalrunner(ep, *argv, "--suite", SUITE, "--suites-dir", str(root))
            return result.exit_code, result.stdout

        base = []
        for seed in range(3):
            inject("none", world, 1000 + seed)
            where = str(root / f"base{seed}")
            code, text = cli("run", "--out", where, "--runs", str(args.runs), "--no-compare")
            assert code == 0, text
            base.append(where)
        code, text = cli("baseline", *(x for b in base for x in ("--from", b)), "--baselines", "b")
        assert code == 0, text
        print(baseline_growth(root / "b" / SUITE), flush=True)
        for night in range(args.nights):
            for cause in (*EXPECTED, "none"):
                inject(cause, world, 10_000 * (night + 1) + len(cause))
                out = root / f"n{night}-{cause}"
                _, text = cli(
                    "run",
                    "--out",
                    str(out),
                    "--runs",
                    str(args.runs),
                    "--baselines",
                    "b",
                    "--no-history",
                )
                said = why(text)
                tally = tallies[cause]
                tally["nights"] += 1
                if cause == "none":
                    tally["flagged"] += len(said)
                    tally["with a cause"] += sum(
                        1 for s in said.values() if not s[0].startswith(NO_CAUSE)
                    )
                    # Nothing is flagged on such a night, so the night explains nothing: ask
                    # `evalrunner explain` about every scenario anyway, the harder test.
                    _, text = cli("explain", "--results", str(out), "--baselines", "b", "--no-diff")
                    heads = [x for x in text.splitlines() if " × " in x]
                    tally["explained anyway"] += len(heads)
                    tally["anyway with a cause"] += sum(
                        not any(c in x for c in NO_CAUSE) for x in heads
                    )
                else:
                    cause_prefix, where = EXPECTED[cause]
                    line = said.get(cause)
                    if line is not None:
                        tally["flagged"] += 1
                        named = causes(line[0])
                        kinds = {k for part in named for k in KINDS if part.startswith(k)}
                        expected = next(k for k in KINDS if cause_prefix.startswith(k))
                        right = any(part.startswith(cause_prefix) for part in named)
                        tally["right"] += right and kinds == {expected}
                        tally["wrong"] += bool(kinds - {expected})
                        tally["unexplained"] += not kinds
                        tally["divergence right"] += any(where in x for x in line)
                    tally["other scenarios flagged"] += len(set(said) - {cause})
                shutil.rmtree(out, ignore_errors=True)  # a year of nights would fill the disk
            print(
                f"night {night + 1}/{args.nights} done, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        if args.sentinel_trials:
            sentinel_trials(cli, world, root, args.runs, args.sentinel_trials)
    AGENTS.reset()
    if not args.nights:
        return
    print(
        f"attribution lab: {args.nights} nights per cause, N = {args.runs} (+ escalation), baseline 3 x {args.runs}"
    )
    print(
        f"{'cause':8} {'nights':>6} {'flagged':>8} {'right':>6} {'wrong':>6} {'unexpl.':>8} {'diverge@inj':>11} {'others flagged':>14}"
    )
    for cause, t in tallies.items():
        if cause == "none":
            continue
        f = t["flagged"] or 1
        print(
            f"{cause:8} {t['nights']:6} {t['flagged']:8} {t['right'] / f:6.0%} {t['wrong'] / f:6.0%} "
            f"{t['unexplained'] / f:8.0%} {t['divergence right'] / f:11.0%} {t['other scenarios flagged']:14}"
        )
    t = tallies["none"]
    print(
        f"none     {t['nights']:6} scenarios flagged: {t['flagged']}, of them given a cause: "
        f"{t['with a cause']}; every scenario explained anyway (evalrunner explain): "
        f"{t['explained anyway']}, given a cause: {t['anyway with a cause']}"
    )


if __name__ == "__main__":
    main()
