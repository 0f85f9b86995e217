"""The prebuilt engine's copies of the model: how many, how many threads each, and which
copy answers a completion (the engine's routing, over stand-ins for the loaded model)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from evalrunner.endpoints._local_model import PREBUILT_SLOTS, prebuilt_layout
from evalrunner.endpoints._prebuilt_server import Engine


@pytest.mark.parametrize(
    ("cores", "threads", "layout"),
    [(1, None, (1, 1)), (2, None, (2, 1)), (8, None, (2, 2)), (16, None, (2, 4)), (2, 3, (2, 3))],
)
def test_two_cores_get_two_one_thread_copies_and_more_cores_use_half_of_them(
    cores: int, threads: int | None, layout: tuple[int, int]
) -> None:
    assert prebuilt_layout(cores, threads) == layout


class Copy:
    """A loaded model's stand-in: answers once released, recording the prompts it got."""

    def __init__(self, release: threading.Event) -> None:
        self.prompts: list[str] = []
        self.release = release

    def handle_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        self.prompts.append(body["prompt"])
        self.release.wait(5)
        usage = {"prompt_tokens": 1, "completion_tokens": 1}
        return {"choices": [{"text": "ok", "finish_reason": "stop"}], "usage": usage}


def test_completions_in_flight_together_go_to_different_copies() -> None:
    release = threading.Event()
    copies = [Copy(release), Copy(release)]
    engine = Engine(copies, seed=1)
    workers = [
        threading.Thread(
            target=engine, args=(f"prompt {i}",), kwargs={"temperature": 0, "stop": []}
        )
        for i in range(2 * PREBUILT_SLOTS)
    ]
    for worker in workers:
        worker.start()
    while sum(len(c.prompts) for c in copies) < len(workers):
        threading.Event().wait(0.01)
    release.set()
    for worker in workers:
        worker.join(5)
    assert [len(c.prompts) for c in copies] == [PREBUILT_SLOTS, PREBUILT_SLOTS]


def test_an_idle_engine_sends_a_run_s_next_turn_to_the_copy_that_cached_its_start() -> None:
    release = threading.Event()
    release.set()
    copies = [Copy(release), Copy(release)]
    engine = Engine(copies, seed=1)
    first = "<|im_start|>system\nYou answer with tools.<|im_end|>\n"
    # Two runs' first turns land on both copies (the first copy is busy with the first).
    gate = threading.Event()
    copies[0].release = gate
    busy = threading.Thread(
        target=engine, args=(first + "run A",), kwargs={"temperature": 0, "stop": []}
    )
    busy.start()
    while not copies[0].prompts:
        threading.Event().wait(0.01)
    engine("an unrelated prompt", temperature=0, stop=[])
    gate.set()
    busy.join(5)
    # Both idle now: run A's second turn goes where its first turn's prompt is cached.
    engine(first + "run A" + "<|im_start|>tool\nParis<|im_end|>", temperature=0, stop=[])
    assert [len(c.prompts) for c in copies] == [2, 1]
    engine("an unrelated prompt, second turn", temperature=0, stop=[])
    assert [len(c.prompts) for c in copies] == [2, 2]
