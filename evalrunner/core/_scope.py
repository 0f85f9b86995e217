"""Capture: any agent run that calls litellm becomes an ATIF trajectory.

An agent needs no evalrunner client. Inside a :func:`capture` scope every
``litellm.completion`` / ``litellm.acompletion`` call (streamed or not) is
seen on its way out and back (:mod:`evalrunner.core._hook`): the request's new
messages and the response become steps (:mod:`evalrunner.core._steps`), and a
:class:`Transport` answers the call: live litellm with retries by default,
a recorded script or a recording of live calls when the scope is given
``replay=`` or ``recorder=``. Nested scopes become embedded sub-agent
trajectories, concurrent ones under ``asyncio.gather`` included (scopes live
in a ContextVar, which every asyncio task copies).

Capture writes nothing to disk; callers decide what to keep.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import sys
import threading
import time
import traceback
import types
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from evalrunner import _signals
from evalrunner.core._actions import sendable
from evalrunner.core._faults import InfraLog, RetrySettings, RunEnded
from evalrunner.core._hook import LiteLLMTransport
from evalrunner.core._hook import install as install_hook
from evalrunner.core._spans import ToolExecution, tool_spans_to
from evalrunner.core._stalls import Stalls
from evalrunner.core._steps import AnswerSlot, TrajectoryBuilder
from evalrunner.core._transport import Answer, Request, Transport, TransportSource
from evalrunner.core._warnings import NoModelCallsWarning, no_model_calls_message

_current: contextvars.ContextVar[CaptureScope | None] = contextvars.ContextVar(
    "evalrunner_capture", default=None
)


def current() -> CaptureScope | None:
    """The innermost open capture scope, if any."""
    return _current.get()


def install() -> None:
    """Wrap litellm (imports it) so calls inside a capture scope are captured."""
    install_hook(current)


@dataclass(frozen=True)
class _Answering:
    """How a scope's calls are to be answered, as :func:`capture` was told.

    Resolved when the scope opens: a given ``transport`` as is; with nothing
    given, a nested scope uses its parent's transport and a top-level one live
    litellm; ``replay`` / ``recorder`` turn the live transport into theirs.
    Live transports of sub-agents share their parent's endpoint log.
    """

    transport: Transport | None = None
    replay: TransportSource | None = None
    recorder: TransportSource | None = None
    retry: RetrySettings | None = None

    def resolve(self, parent: CaptureScope | None) -> Transport:
        if self.transport is not None:
            return self.transport
        if parent is not None and self.replay is None and self.recorder is None:
            return parent.transport
        infra = parent.transport.infra if parent is not None else InfraLog(self.retry)
        live = LiteLLMTransport(infra)
        if self.replay is not None:
            return self.replay.transport(live)
        if self.recorder is not None:
            return self.recorder.transport(live)
        return live


class CaptureScope:
    """One capture scope: the trajectory of one agent (or sub-agent) run. Open it with
    :func:`capture`."""

    def __init__(
        self,
        name: str,
        version: str,
        call_id: str | None,
        answering: _Answering,
        expect_model_calls: bool = True,
    ) -> None:
        self.call_id = call_id
        self.name = name
        # Model calls seen here and in finished sub-agent scopes; none at all is
        # a NoModelCallsWarning when a top-level scope closes.
        self.model_calls = 0
        # Model calls made here past capture (litellm's function bound before it was
        # wrapped): on their way to the endpoint, in no step.
        self.missed_calls = 0
        self.expect_model_calls = expect_model_calls
        self.builder = TrajectoryBuilder(name, version=version)
        self.parent: CaptureScope | None = None
        self.trajectory: dict[str, Any] | None = None
        self.first_request: dict[str, Any] | None = None
        """The first model request, as :func:`~evalrunner.core._actions.sendable` keeps it."""
        self.error: BaseException | None = None
        self._answering = answering
        self._transport: Transport | None = None
        self._subagents: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._token: contextvars.Token[CaptureScope | None] | None = None
        self._tools = contextlib.ExitStack()

    @property
    def transport(self) -> Transport:
        """What answers this scope's calls (chosen when the scope is entered)."""
        if self._transport is None:
            self._transport = self._answering.resolve(self.parent)
        return self._transport

    # -- scope management ------------------------------------------------------------

    def __enter__(self) -> CaptureScope:
        install()
        parent = _current.get()
        if parent is not None:
            self.parent = parent
            self.builder.session_id = parent.builder.session_id
            parent.builder.link_subagent(self.builder.trajectory_id, self.call_id)
        self._transport = self._answering.resolve(parent)
        self._token = _current.set(self)
        # The agent's own execute_tool spans, where it emits them: each execution joins
        # the call it ran (a tool that raised marked as failed).
        self._tools.enter_context(tool_spans_to(self._tool_ran))
        return self

    def _tool_ran(self, execution: ToolExecution) -> None:
        self.builder.add_tool_execution(execution)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        self._tools.close()
        if self._token is not None:
            _current.reset(self._token)
        if exc is not None:
            self.error = exc
        with self._lock:
            subagents = list(self._subagents)
        self.trajectory = self.builder.build(error=self.error, subagents=subagents)
        if self.parent is not None:
            with self.parent._lock:
                self.parent._subagents.append(self.trajectory)
                self.parent.model_calls += self.model_calls
                self.parent.missed_calls += self.missed_calls
        elif exc_type is None and self.model_calls == 0 and self.expect_model_calls:
            # A crash before the first call is the crash's story, not a bypassed capture.
            warnings.warn(no_model_calls_message(self.name), NoModelCallsWarning, stacklevel=2)

    async def __aenter__(self) -> CaptureScope:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- model calls (from the litellm hook) ------------------------------------------------

    def complete(self, request: Request) -> Any:
        slot = self._sent(request)
        return self._received(self.transport.complete(request), slot)

    async def acomplete(self, request: Request) -> Any:
        slot = self._sent(request)
        return self._received(await self.transport.acomplete(request), slot)

    def missed(self, model: str) -> None:
        with self._lock:
            self.missed_calls += 1

    def _sent(self, request: Request) -> AnswerSlot:
        self.model_calls += 1
        if self.first_request is None:
            self.first_request = sendable(request)
        # The answer's place is kept next to the request: concurrent calls then give
        # the same steps live and in replay, whatever order their answers arrive in.
        return self.builder.send(request.get("messages") or [], request.get("tools"))

    def _received(self, answer: Answer, slot: AnswerSlot) -> Any:
        if answer.record is not None:
            self.builder.add_response(answer.record, answer.generation_id, slot)
        return answer.response


# -- public helpers ----------------------------------------------------------------------------


def capture(
    name: str = "agent",
    *,
    version: str = "0",
    call_id: str | None = None,
    transport: Transport | None = None,
    replay: TransportSource | None = None,
    recorder: TransportSource | None = None,
    retry: RetrySettings | None = None,
    expect_model_calls: bool = True,
) -> CaptureScope:
    """Open a capture scope (``with`` or ``async with``); nested scopes become sub-agents.

    ``call_id`` links a sub-agent to the parent's tool call that spawned it.
    ``replay`` (a frozen Replayer) answers from a recording, ``recorder`` (a
    frozen Recorder) records live answers, ``retry`` is the live calls'
    RetryPolicy; ``transport`` answers calls any other way. After the block,
    ``scope.trajectory`` holds the ATIF dict, also when the block raised
    (then ``extra.crashed`` is true). A top-level scope that saw no model call
    (its sub-agents' included) warns with :class:`NoModelCallsWarning` when it
    closes, unless ``expect_model_calls=False``.
    """
    return CaptureScope(
        name, version, call_id, _Answering(transport, replay, recorder, retry), expect_model_calls
    )


def record_tool_result(call_id: str | None, content: Any, *, error: bool = False) -> None:
    """Record a tool's output as the observation of the step that made the call.

    Needed for results that never reach a later model call (the last tool
    round, or tools whose output the agent keeps to itself); results that do
    reach the model are also picked up from the request. ``error=True`` marks a
    failed tool (checks like ``all_tools_succeeded`` read it).
    """
    scope = _current.get()
    if scope is not None:
        scope.builder.add_tool_result(call_id, content, error=error)


@dataclass
class CaptureResult:
    """What a captured run produced."""

    trajectory: dict[str, Any]
    output: Any = None
    error: BaseException | None = None
    traceback: str | None = None
    replay_errors: list[str] = field(default_factory=list)
    infra: InfraLog | None = None
    timed_out: bool = False
    """The run was stopped by its ``timeout`` (``error`` is then a TimeoutError)."""
    first_request: dict[str, Any] | None = None
    """The agent's first model request (content and sampling parameters), if it made one."""
    missed_calls: int = 0
    """Model calls the run made past capture (litellm's function bound before the wrap):
    they reached the endpoint and are in no step."""

    @property
    def crashed(self) -> bool:
        return self.error is not None


def _result(
    scope: CaptureScope,
    output: Any,
    error: BaseException | None,
    timed_out: bool = False,
    where: str | None = None,
) -> CaptureResult:
    """``where``: a timed-out sync agent's stack, its traceback (the TimeoutError's is ours)."""
    assert scope.trajectory is not None
    infra = scope.transport.infra
    if scope.parent is None:
        # The run is over: whatever of it still runs (a timed-out thread, a gather
        # sibling) may not reach the endpoint any more.
        infra.close()
    # Raises when the harness failed (replay errors), even if the agent caught it.
    notes = scope.transport.finish(error)
    tb = "".join(traceback.format_exception(error)) if error is not None else None
    if timed_out and where is not None:
        tb = where
    return CaptureResult(
        scope.trajectory,
        output,
        error,
        tb,
        notes,
        infra,
        timed_out,
        scope.first_request,
        scope.missed_calls,
    )


def run_captured(
    fn: Callable[..., Any],
    *args: Any,
    name: str = "agent",
    version: str = "0",
    transport: Transport | None = None,
    replay: TransportSource | None = None,
    recorder: TransportSource | None = None,
    retry: RetrySettings | None = None,
    expect_model_calls: bool = True,
    **kwargs: Any,
) -> CaptureResult:
    """Run a sync agent callable under capture; exceptions are kept, not raised.

    Replay errors (ScriptExhausted, RequestMismatch in strict mode,
    NetworkBlocked) are raised: they are the harness's verdict, not the agent's crash.
    ``expect_model_calls=False`` silences the :class:`NoModelCallsWarning` of a
    run that made no model call.
    """
    scope = capture(
        name, version=version, transport=transport, replay=replay, recorder=recorder, retry=retry
    )
    scope.expect_model_calls = expect_model_calls
    output: Any = None
    error: BaseException | None = None
    try:
        with scope:
            output = fn(*args, **kwargs)
    except Exception as exc:  # the agent's crash is part of the trajectory
        error = exc
    except BaseException as exc:
        error = _agents_own(exc)
    return _result(scope, output, error)


def _agents_own(exc: BaseException) -> BaseException:
    """A BaseException out of the agent as its run's crash, or raised on when it is a stop
    of the night or the test session: a cancellation asked of this task, a real Ctrl-C
    or SIGTERM (:mod:`evalrunner._signals`), pytest's own skip or fail.

    Before, an agent's own ``KeyboardInterrupt``, ``CancelledError`` or any other
    BaseException ended the night, and every ``--resume`` died on the same run."""
    if isinstance(exc, SystemExit):
        return AgentExited.of(exc)
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise exc
    elif isinstance(exc, KeyboardInterrupt):
        if _signals.from_outside():
            raise exc
    elif isinstance(exc, GeneratorExit) or type(exc).__module__.startswith("_pytest"):
        raise exc
    return AgentStopped.of(exc)


class AgentStopped(Exception):
    """The agent raised a BaseException of its own (``KeyboardInterrupt``, ``CancelledError``
    and the like): its run crashed; the night goes on."""

    @classmethod
    def of(cls, exc: BaseException) -> AgentStopped:
        crash = cls(f"the agent raised {type(exc).__name__}({exc})")
        crash.__cause__ = exc
        return crash


class AgentExited(Exception):
    """The agent called ``sys.exit()``: its run crashed; the night (or test session) goes on."""

    @classmethod
    def of(cls, exc: SystemExit) -> AgentExited:
        crash = cls(f"the agent called sys.exit({exc.code!r})")
        crash.__cause__ = exc
        return crash


async def arun_captured(
    fn: Callable[..., Awaitable[Any]] | Callable[..., Any],
    *args: Any,
    name: str = "agent",
    version: str = "0",
    transport: Transport | None = None,
    replay: TransportSource | None = None,
    recorder: TransportSource | None = None,
    retry: RetrySettings | None = None,
    timeout: float | None = None,
    executor: concurrent.futures.Executor | None = None,
    expect_model_calls: bool = True,
    **kwargs: Any,
) -> CaptureResult:
    """Like :func:`run_captured` for async agents; sync ones run in ``executor``.

    ``executor`` defaults to the event loop's default executor. ``timeout``
    bounds the whole run, model calls included (none outlives it); on expiry
    ``error`` is a TimeoutError and ``timed_out`` is set.
    """
    scope = capture(
        name, version=version, transport=transport, replay=replay, recorder=recorder, retry=retry
    )
    scope.expect_model_calls = expect_model_calls
    output: Any = None
    error: BaseException | None = None

    thread: list[int] = []  # the sync agent's thread, to say where it was at a timeout

    def in_thread() -> Any:
        thread.append(threading.get_ident())
        try:
            return fn(*args, **kwargs)
        except (Exception, SystemExit):
            raise
        except BaseException as exc:  # no signal reaches a worker thread: the agent's own
            raise AgentStopped.of(exc) from exc

    def extend(by: float) -> None:
        """Another run held the loop ``by`` seconds: this run's clock did not run for it."""
        when = limit.when()
        if when is not None and not limit.expired():  # an expiring one cannot be moved
            limit.reschedule(when + by)
        # The run's own deadline only (a nested capture shares its parent's, moved once).
        if scope.parent is None and scope.transport.infra.deadline is not None:
            scope.transport.infra.deadline += by

    stalls = Stalls(extend)

    async def call() -> Any:
        if inspect.iscoroutinefunction(fn):
            return await stalls.timed(fn(*args, **kwargs))
        # The worker runs in a copy of this context, so it sees the scope
        # (as asyncio.to_thread does; run_in_executor alone would not).
        context = contextvars.copy_context()
        result = await asyncio.get_running_loop().run_in_executor(
            executor, functools.partial(context.run, in_thread)
        )
        return await result if inspect.isawaitable(result) else result

    limit = asyncio.timeout(timeout)
    try:
        async with scope:
            if timeout is not None and scope.parent is None:
                scope.transport.infra.deadline = time.monotonic() + timeout
            # The timeout sits inside the scope so a timed-out run still has a
            # trajectory. A sync agent's worker thread cannot be stopped; its
            # requests end at the deadline and its later calls are refused.
            async with limit:
                with stalls:
                    output = await call()
    except Exception as exc:
        error = exc
    except BaseException as exc:
        error = _agents_own(exc)
    # RunEnded: a call found the deadline passed a moment before the timeout fired.
    timed_out = limit.expired() or isinstance(error, RunEnded)
    where = _stack_of(thread[0], in_thread.__code__, timeout) if timed_out and thread else None
    return _result(scope, output, error, timed_out, where)


def _stack_of(ident: int, below: types.CodeType, timeout: float | None) -> str | None:
    """Where a sync agent's thread is now, from the frame under ``below`` (the executor's
    frames are not the agent's), as a traceback reads."""
    frame = sys._current_frames().get(ident)
    if frame is None:  # it finished in the meantime
        return None
    frames = traceback.extract_stack(frame)
    mine = [
        i
        for i, f in enumerate(frames)
        if (f.name, f.filename) == (below.co_name, below.co_filename)
    ]
    after = f" after {timeout:g} s" if timeout is not None else ""
    return f"the agent was still running, here, when the run timed out{after}:\n" + "".join(
        traceback.format_list(frames[mine[0] + 1 if mine else 0 :])
    )
