"""How much the frozen-mode core costs compared with just parsing and writing the JSON.

Times ``normalize`` + ``shape`` + ``diff_shapes`` (against a golden shape computed
beforehand) of a synthetic, realistic trajectory, next to a plain JSON round trip
of the same trajectory (``json.dumps(json.loads(text))``), in one process with
``timeit`` (best of several repeats). Target: the core within 3x of the round trip.

Then what a night pays per run file: ``ResultsDir.write_run`` (redaction, canonical
JSON, an atomic write) next to ``json.dumps`` and a plain write of the same document,
each run's trajectory with ids and timestamps of its own (as a night's are: the
redaction memo cannot have seen them). Last, capture's intake of a long run's requests
(every request resends the conversation) next to ``json.dumps`` of the same requests.

    python benchmarks/bench_core.py            # 10 and 1,000 steps
    python benchmarks/bench_core.py --profile  # plus a cProfile of the 1,000-step core
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import sys
import timeit
import uuid
from typing import Any

from evalrunner.core._diff import diff_shapes
from evalrunner.core._normalize import normalize
from evalrunner.core._shape import Shape, shape

TARGET = 3.0
TOOLS = ("search_docs", "read_file", "run_tests", "lookup_capital")


def _ts(rng: random.Random) -> str:
    return f"2025-06-{rng.randint(10, 28)}T{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}.{rng.randint(0, 999999):06d}Z"


def _agent_step(rng: random.Random, step_id: int, turn: int) -> dict[str, Any]:
    n_calls = 1 + turn % 3
    ids = [f"call_{rng.getrandbits(64):016x}" for _ in range(n_calls)]
    calls = [
        {
            "tool_call_id": i,
            "function_name": TOOLS[(turn + k) % len(TOOLS)],
            "arguments": {"query": f"topic {turn}.{k}", "limit": 5},
        }
        for k, i in enumerate(ids)
    ]
    results = [
        {"source_call_id": i, "content": f"Result {turn}.{k}: " + "lorem ipsum dolor sit amet " * 8}
        for k, i in enumerate(ids)
    ]
    return {
        "step_id": step_id,
        "timestamp": _ts(rng),
        "source": "agent",
        "model_name": "openai/gpt-4o-mini",
        "message": f"Step {turn}: I will call {n_calls} tool(s) to make progress on the task.",
        "reasoning_content": "Thinking about which tool helps next. " * 3,
        "tool_calls": calls,
        "observation": {"results": results},
        "metrics": {
            "prompt_tokens": 900 + 37 * turn,
            "completion_tokens": 40 + turn % 17,
            "cost_usd": 0.0001 * turn + 3e-18,
        },
        "llm_call_count": 1,
        "extra": {
            "finish_reason": "tool_calls",
            "generation_id": f"chatcmpl-{uuid.UUID(int=rng.getrandbits(128))}",
        },
    }


def synthetic(n_steps: int, seed: int = 0, n_subagents: int = 3) -> dict[str, Any]:
    """A trajectory of ``n_steps`` top-level steps (system, user, then agent turns)
    plus ``n_subagents`` sub-agents of about n_steps/20 steps each."""
    rng = random.Random(seed)
    session = uuid.UUID(int=rng.getrandbits(128)).hex

    def traj(name: str, steps_wanted: int, subs: int) -> dict[str, Any]:
        steps: list[dict[str, Any]] = [
            {
                "step_id": 1,
                "timestamp": _ts(rng),
                "source": "system",
                "message": f"You are {name}. Tools: <function search_docs at 0x7f{rng.getrandbits(40):010x}>",
            },
            {
                "step_id": 2,
                "timestamp": _ts(rng),
                "source": "user",
                "message": "Fix the failing test in the repository and explain the cause.",
            },
        ]
        turn = 0
        while len(steps) < steps_wanted - (1 if subs else 0) - 1:
            steps.append(_agent_step(rng, len(steps) + 1, turn))
            turn += 1
        children = [traj(f"{name}-worker-{k}", max(4, steps_wanted // 20), 0) for k in range(subs)]
        if children:
            steps.append(
                {
                    "step_id": len(steps) + 1,
                    "timestamp": _ts(rng),
                    "source": "agent",
                    "message": "",
                    "llm_call_count": 0,
                    "observation": {
                        "results": [
                            {
                                "subagent_trajectory_ref": [
                                    {"trajectory_id": c["trajectory_id"]} for c in children
                                ]
                            }
                        ]
                    },
                }
            )
        steps.append(
            {
                "step_id": len(steps) + 1,
                "timestamp": _ts(rng),
                "source": "agent",
                "message": "Done: the fixture path was wrong.",
                "llm_call_count": 1,
                "metrics": {"prompt_tokens": 1200, "completion_tokens": 30},
            }
        )
        rng.shuffle(children)
        out: dict[str, Any] = {
            "schema_version": "ATIF-v1.8",
            "session_id": session,
            "trajectory_id": uuid.UUID(int=rng.getrandbits(128)).hex,
            "agent": {"name": name, "version": "1.0", "model_name": "openai/gpt-4o-mini"},
            "steps": steps,
            "final_metrics": {
                "total_prompt_tokens": 0,
                "total_completion_tokens": 0,
                "total_cost_usd": 0.12 + 1e-17,
                "total_steps": len(steps),
            },
        }
        if children:
            out["subagent_trajectories"] = children
        return out

    return traj("coder", n_steps, n_subagents)


def core(traj: dict[str, Any], golden: Shape) -> list[Any]:
    return diff_shapes(golden, shape(normalize(traj)))


def bench(n_steps: int, repeat: int) -> tuple[float, float, int]:
    traj = synthetic(n_steps, seed=1)
    golden = shape(normalize(synthetic(n_steps, seed=2)))  # the same run, recorded earlier
    assert core(traj, golden) == [], "the synthetic runs should normalise equal"
    text = json.dumps(traj)
    number = max(1, 2000 // n_steps)
    t_core = min(timeit.repeat(lambda: core(traj, golden), number=number, repeat=repeat)) / number
    t_json = (
        min(timeit.repeat(lambda: json.dumps(json.loads(text)), number=number, repeat=repeat))
        / number
    )
    return t_core, t_json, len(text)


WRITES = ("write_run", "redact+JSON", "redact+indented", "json.dumps+write")
"""What :func:`bench_write` times: the whole write; its redaction and one-line JSON in memory;
the same with the indented JSON run files had before; the floor."""


def bench_write(n_steps: int, runs: int) -> dict[str, float]:
    """Seconds of CPU per run file for each of :data:`WRITES`, taken in turn, each on
    trajectories of its own (fresh ids and timestamps, as a night's runs have)."""
    import tempfile
    import time
    from pathlib import Path

    from evalrunner._jsonio import canonical, dumps
    from evalrunner._redact import redact
    from evalrunner.live._results import ResultsDir
    from evalrunner.suite._record import RunRecord

    kinds = len(WRITES)
    trajectories = [synthetic(n_steps, seed=1000 + i, n_subagents=0) for i in range(kinds * runs)]
    spent = dict.fromkeys(WRITES, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        results = ResultsDir(Path(tmp) / "ours")
        plain = Path(tmp) / "plain"
        plain.mkdir()
        for i, traj in enumerate(trajectories):
            rec = RunRecord(
                run_id=f"s/m/{i}", suite="x", scenario="s", model="m", index=i, outcome="passed"
            )
            doc = {"format_version": 1, "record": rec.model_dump(mode="json"), "trajectory": traj}
            kind = WRITES[i % kinds]
            t0 = time.process_time()
            if kind == "write_run":
                results.write_run(rec, traj)
            elif kind == "redact+JSON":
                canonical(redact(doc))
            elif kind == "redact+indented":
                dumps(redact(doc))
            else:
                (plain / f"{i}.json").write_text(json.dumps(doc), encoding="utf-8")
            spent[kind] += time.process_time() - t0
    return {kind: total / runs for kind, total in spent.items()}


def bench_capture(calls: int, result_chars: int = 2000) -> tuple[float, float]:
    """CPU seconds a run of ``calls`` model calls spends in capture's intake of the requests
    (:meth:`TrajectoryBuilder.ingest_messages`), and in ``json.dumps`` of the same requests:
    what sending them costs any SDK at least (each request carries the whole conversation)."""
    import time

    from evalrunner.core._steps import TrajectoryBuilder

    builder = TrajectoryBuilder("bench")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    ours = sent = 0.0
    for i in range(calls):
        t0 = time.process_time()
        builder.ingest_messages(messages)
        t1 = time.process_time()
        json.dumps({"model": "m", "messages": messages})
        t2 = time.process_time()
        ours, sent = ours + t1 - t0, sent + t2 - t1
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        messages = [
            *messages,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": f"call_{i}",
                "content": f"out {i} " * (result_chars // 6),
            },
        ]
    return ours, sent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="*", default=[10, 1000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the core on the largest trajectory"
    )
    args = parser.parse_args(argv)

    print(
        f"{'steps':>6} {'JSON bytes':>11} {'core ms':>9} {'json rt ms':>11} {'ratio':>7}  target <= {TARGET:g}x"
    )
    worst = 0.0
    for n in args.steps:
        t_core, t_json, size = bench(n, args.repeat)
        ratio = t_core / t_json
        worst = max(worst, ratio)
        print(
            f"{n:>6} {size:>11,} {t_core * 1e3:>9.3f} {t_json * 1e3:>11.3f} {ratio:>6.2f}x  {'ok' if ratio <= TARGET else 'OVER'}"
        )
    print(f"\nCPU ms per run file: {', '.join(WRITES)}; write_run / json.dumps+write")
    for n in (10, 100):
        spent = bench_write(n, 300 if n == 10 else 40)
        row = " ".join(f"{spent[kind] * 1e3:>8.3f}" for kind in WRITES)
        ratio = spent["write_run"] / spent["json.dumps+write"]
        print(f"{n:>6} steps {row} {ratio:>6.2f}x")
    print("\nCPU ms per run, capture's intake of the requests vs json.dumps of them (2 KB results)")
    for calls in (20, 200):
        ours, sent = bench_capture(calls)
        print(f"{calls:>6} calls {ours * 1e3:>9.1f} {sent * 1e3:>9.1f} {ours / sent:>6.2f}x")
    if args.profile:
        n = max(args.steps)
        traj, golden = synthetic(n, seed=1), shape(normalize(synthetic(n, seed=2)))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            core(traj, golden)
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(12)
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
