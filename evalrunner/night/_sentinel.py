"""The sentinel: the baseline's own first request, sent again to tonight's endpoint.

A baseline keeps the first request its runs sent most (messages, tools, sampling
parameters: ``nights[].traces.sent``) and what each run did first (its first tool
call, or answering). The sentinel sends that request, unchanged, ``calls`` times to
the model the cell runs on, and compares the first actions it gets back with the
baseline's. The request is the same, so a different distribution is the model's
doing (docs/explain.md). A call that fails under the suite's retry policy is
counted apart (``unreachable``), never as an action: a fault is not behaviour.

It runs on its own (``evalrunner sentinel``, a cheap canary for a provider) and in
a night, for failing cells whose first request did not change, within a share of
the night's model calls (:data:`DEFAULT_SHARE`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evalrunner._next import NextStep
from evalrunner.baseline._explain import SentinelResult
from evalrunner.baseline._file import Baseline
from evalrunner.core._actions import ANSWER, move
from evalrunner.core._faults import InfraLog, describe, is_infra_error
from evalrunner.core._hook import LiteLLMTransport
from evalrunner.core._response import ResponseRecord
from evalrunner.endpoints._endpoints import Endpoint, EndpointPool
from evalrunner.suite._record import CellKey
from evalrunner.suite._settings import Suite

__all__ = [
    "DEFAULT_CALLS",
    "DEFAULT_SHARE",
    "MIN_CALLS",
    "SentinelResult",
    "run_sentinel",
    "sentinel_calls",
]

DEFAULT_CALLS = 20
"""Calls per cell: 0.9 -> 0.6 of one first action is found 4 times in 5 against a
baseline of 60 runs at alpha 0.05 (docs/explain.md)."""
DEFAULT_SHARE = 0.10
"""In a night, the sentinel spends at most this share of the night's model calls."""
MIN_CALLS = 5
"""Fewer calls a cell than this tell nothing: the sentinel is skipped rather than spread thin."""
_CONCURRENCY = 4
REFUSED = "(refused)"
EMPTY = "(empty)"


def _action(record: ResponseRecord, whole: bool) -> str:
    """What the response did: its first tool call, or (``whole``) every call it made at once."""
    if record.tool_calls:
        return move([c.name for c in record.tool_calls]) if whole else record.tool_calls[0].name
    return ANSWER if (record.content or "").strip() else EMPTY


async def _probe(
    endpoint: Endpoint,
    request: Mapping[str, Any],
    calls: int,
    suite: Suite,
    cell: CellKey,
    whole: bool,
) -> tuple[Counter[str], list[str]]:
    """Send ``request`` ``calls`` times; the first actions it got back (``whole``: the
    responses' every call), and calls that failed."""
    scenario = next(s for s in suite.scenarios if s.id == cell.scenario)
    where = endpoint.litellm_kwargs()
    slots = asyncio.Semaphore(min(_CONCURRENCY, endpoint.max_concurrency or _CONCURRENCY))
    actions: Counter[str] = Counter()
    failed: list[str] = []

    async def one() -> None:
        async with slots:
            transport = LiteLLMTransport(InfraLog(scenario.retry))
            try:
                answer = await transport.acomplete({**request, **where})
            except Exception as exc:
                if getattr(exc, "status_code", None) in (400, 422) and not is_infra_error(exc):
                    actions[REFUSED] += 1  # the model's endpoint refused it (its context window)
                else:
                    # A fault, a key or name the endpoint does not know, anything else: never
                    # an action, and named in the line (a night after its runs must not die).
                    failed.append(describe(exc))
                return
            if answer.record is None:
                failed.append("no answer")
            else:
                actions[_action(answer.record, whole)] += 1

    await asyncio.gather(*(one() for _ in range(calls)))
    return actions, failed


def sentinel_calls(night_calls: int, cells: int, share: float = DEFAULT_SHARE) -> int:
    """Calls per cell a night can give the sentinel: ``share`` of its model calls, at most
    :data:`DEFAULT_CALLS` each; 0 when that is too few to tell anything."""
    each = min(DEFAULT_CALLS, int(night_calls * share) // max(1, cells))
    return each if each >= MIN_CALLS else 0


def run_sentinel(
    suite: Suite,
    baselines: Mapping[CellKey, Baseline],
    cells: Sequence[CellKey],
    *,
    calls: int = DEFAULT_CALLS,
    alpha: float = 0.05,
    pool: EndpointPool | None = None,
) -> dict[CellKey, SentinelResult]:
    """The sentinel for each of ``cells`` that has a baseline (``alpha`` over all of them)."""
    from evalrunner.stats._formulas import two_proportions_p  # scipy: only when probing

    each = alpha / max(1, len(cells))
    out: dict[CellKey, SentinelResult] = {}
    with contextlib.ExitStack() as stack:
        endpoints = pool or stack.enter_context(EndpointPool())
        for cell in cells:
            baseline = baselines.get(cell)
            if baseline is None:
                continue
            # Whole first responses where the baseline kept them: a model that starts
            # calling tools in parallel keeps its first tool call, and would pass unseen.
            moves = baseline.first_moves()
            before = Counter(baseline.first_actions() if moves is None else moves)
            request = baseline.sent
            if request is None or not before:
                out[cell] = SentinelResult.not_run(
                    cell,
                    "the baseline keeps no first request to send again; accept a new "
                    f"baseline with '{NextStep('baseline')}'",
                )
                continue
            endpoint = endpoints.resolve(cell.model)
            tonight, failed = asyncio.run(
                _probe(endpoint, request, calls, suite, cell, moves is not None)
            )
            favourite = before.most_common(1)[0][0]
            n_b, n_t = sum(before.values()), sum(tonight.values())
            p = (
                two_proportions_p(before[favourite], n_b, tonight[favourite], n_t)
                if n_t >= MIN_CALLS
                else None
            )
            out[cell] = SentinelResult(cell, before, tonight, failed, p, each)
    return out
