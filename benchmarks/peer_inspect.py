"""The peer line of bench_runner.py: the same runs made by inspect_ai, in its own interpreter.

One sample (bench_runner's task) run ``--runs`` times with ``epochs``, the two
tools offered through ``use_tools`` and inspect's ``generate`` loop, against
the endpoint bench_runner started, at the same concurrency (``max_connections``).
It prints one JSON line: the eval's wall and CPU seconds (imports not counted).

Run by bench_runner.py with ``--peer-python PATH`` (an interpreter that has
inspect_ai installed; it is not one of our dependencies):

    python -m venv /tmp/peer && /tmp/peer/bin/pip install inspect_ai openai
    python benchmarks/bench_runner.py --peer-python /tmp/peer/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--task", required=True)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-fake-not-a-secret")

    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def lookup_capital() -> Any:
        async def execute(country: str) -> str:
            """The capital city of a country.

            Args:
                country: The country.
            """
            return {"japan": "Tokyo"}.get(country.lower(), "unknown")

        return execute

    @tool
    def city_population() -> Any:
        async def execute(city: str) -> str:
            """The population of a city.

            Args:
                city: The city.
            """
            return {"tokyo": "14 million"}.get(city.lower(), "unknown")

        return execute

    task = Task(
        dataset=[Sample(input=args.task, target="14")],
        solver=[use_tools(lookup_capital(), city_population()), generate()],
        epochs=args.runs,
    )
    with tempfile.TemporaryDirectory(prefix="peer-inspect-") as logs:
        started, cpu = time.perf_counter(), time.process_time()
        [log] = eval(
            task,
            model="openai/fake",
            model_base_url=args.api_base,
            model_args={"responses_api": False},  # Chat Completions, as our agent calls it
            max_connections=args.concurrency,
            max_samples=args.concurrency,
            log_dir=logs,
            display="none",
        )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        results = log.results
        samples = results.completed_samples if results else 0
        error = str(log.error.message)[:300] if log.error else None
    print(
        json.dumps(
            {
                "status": log.status,
                "error": error,
                "samples": samples,
                "wall_s": wall,
                "cpu_s": cpu,  # the eval's, not the import's: as the other lines count
            }
        )
    )


if __name__ == "__main__":
    main()
