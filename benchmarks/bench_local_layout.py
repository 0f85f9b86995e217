"""The prebuilt engine's layouts side by side: copies of the model x threads x slots.

Issue 54's night took 4 minutes because the embedded model answered one request at a
time. This loads the model as each layout would (``_prebuilt_server.load``, the engine's
own ``Engine`` routing completions to copies), sends it 8 completions of 150 tokens at
once, and prints the tokens a second it decoded, on an idle machine and beside one
process that keeps a core busy (the shared machine the layout must survive):

    .venv/bin/python benchmarks/bench_local_layout.py 2>/dev/null   # ~4 min; llama.cpp logs

The layouts: one request at a time (the engine before), one copy with 4 slots on one
thread and on two, and two one-thread copies with 4 slots each (the default on two cores:
``endpoints._local_model.prebuilt_layout``). Printed per layout: tokens a second idle and
busy, and the process's resident memory with the copies loaded.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from evalrunner.endpoints._local_model import find_gguf
from evalrunner.endpoints._prebuilt_server import Engine, load

LAYOUTS = (  # name, copies, threads each, slots each, requests in flight
    ("one at a time (before)", 1, 1, 1, 1),
    ("1 copy x 1 thread x 4 slots", 1, 1, 4, 4),
    ("1 copy x 2 threads x 4 slots", 1, 2, 4, 4),
    ("2 copies x 1 thread x 4 slots (now)", 2, 1, 4, 8),
)
TOKENS = 150


@contextmanager
def busy_core() -> Iterator[None]:
    """One other process keeping a core busy for the block."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def decode_rate(engine: Engine, in_flight: int, completions: int) -> float:
    """Tokens a second for ``completions`` answers, ``in_flight`` of them at a time."""
    prompts = [
        f"<|im_start|>user\nWrite a short story about city number {i}.<|im_end|>\n"
        "<|im_start|>assistant\n"
        for i in range(completions)
    ]
    done: list[int] = []
    slots = threading.Semaphore(in_flight)

    def one(prompt: str) -> None:
        with slots:
            answer = engine(
                prompt, temperature=0.7, stop=[], max_tokens=TOKENS, sampling={"ignore_eos": True}
            )
            done.append(answer.completion_tokens)

    started = time.monotonic()
    workers = [threading.Thread(target=one, args=(p,)) for p in prompts]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(done) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--completions", type=int, default=8)
    args = parser.parse_args()
    model = str(find_gguf())
    print(f"{'layout':<38}{'idle tok/s':>11}{'busy tok/s':>11}{'RSS MB':>8}")
    for name, copies, threads, slots, in_flight in LAYOUTS:
        # Each layout in a process of its own, so memory and threads start clean.
        with multiprocessing.Pool(1) as pool:
            idle, busy, rss = pool.apply(
                _measure, (model, copies, threads, slots, in_flight, args.completions)
            )
        print(f"{name:<38}{idle:>11.1f}{busy:>11.1f}{rss:>8.0f}", flush=True)


def _measure(
    model: str, copies: int, threads: int, slots: int, in_flight: int, completions: int
) -> tuple[float, float, float]:
    servers = [load(model, n_ctx=4096, threads=threads, slots=slots) for _ in range(copies)]
    engine = Engine(servers, seed=1)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    idle = decode_rate(engine, in_flight, completions)
    with busy_core():
        busy = decode_rate(engine, in_flight, completions)
    return idle, busy, rss


if __name__ == "__main__":
    main()
