"""Telling infrastructure faults from everything else, and retrying them.

An endpoint that answers 429, 5xx, times out, resets the connection, sends
malformed JSON or a response with no usable choice says nothing about the
agent's behaviour. Such calls are retried with exponential backoff and jitter
(honouring ``Retry-After``), each attempt bounded by a per-request timeout;
if they still fail, the run is an ``infra_error`` — never a behaviour failure
or a skip, even if the agent caught the exception.

A run's :class:`InfraLog` also bounds the run in time: no attempt outlives
the run's deadline, and once the run has ended (:meth:`InfraLog.close`) its
late calls are refused and its in-flight async calls cancelled, so a run
that timed out or crashed leaves nothing talking to the endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

T = TypeVar("T")

_INFRA_NAMES = frozenset(
    {
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
        "Timeout",
        "APITimeoutError",
        "APIConnectionError",
        "ConnectionError",
        "ReadTimeout",
        "ConnectTimeout",
        "RemoteProtocolError",
        "JSONDecodeError",
        "MidStreamFallbackError",
        "TimeoutError",
    }
)


class EndpointFault(Exception):
    """The endpoint answered, but with nothing an agent could use (raised by our transport)."""


class NoUsableChoice(EndpointFault):
    """A successful response without a single choice (or a stream without one)."""


class RunEnded(TimeoutError):
    """A model call made when its run's time was up, or after the run had ended; not sent."""


class RetrySettings(Protocol):
    max_attempts: int
    backoff_s: float
    max_backoff_s: float
    jitter: bool
    request_timeout_s: float
    attempt_deadline_s: float | None


class AttemptOverran(TimeoutError):
    """One attempt took longer in all than its deadline (an endpoint sending a byte now
    and then is never idle long enough for the request timeout)."""


_CONTEXT_WINDOW = re.compile(
    r"context[ _-]?(?:window|length)[ _-]?exceeded|maximum context (?:length|limit)|"
    r"exceeds? (?:the )?(?:model'?s? )?context (?:window|length|limit)|context_length_exceeded|"
    r"prompt is too long|input is too long|longer than the model's context length|"
    # llama.cpp's server; Gemini; servers that state both lengths
    r"exceeds the available context size|exceeds the maximum number of tokens allowed|"
    r"input tokens exceed the configured limit|current length is \d+ while limit is",
    re.IGNORECASE,
)


def says_context_window(text: str) -> bool:
    """An endpoint's error text saying the model's context window was overrun (the phrases
    providers use, llama.cpp's among them)."""
    return _CONTEXT_WINDOW.search(text) is not None


def context_window_exceeded(exc: BaseException) -> BaseException | None:
    """The error in ``exc``'s cause chain saying the model's context window was overrun, or None.

    litellm raises ``ContextWindowExceededError``; frameworks wrap it (smolagents'
    ``AgentGenerationError``), providers say it in words ("maximum context length").
    """
    for current in reversed(_chain(exc)):  # the innermost says it best
        if "ContextWindowExceeded" in type(current).__name__ or says_context_window(str(current)):
            return current
    return None


def is_infra_error(exc: BaseException) -> bool:
    """True for endpoint faults: rate limits, 5xx, timeouts, resets, malformed responses."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = type(current).__name__
        if name == "JSONDecodeError" and not _parsed_by_a_client(current):
            pass  # the agent's own json.loads (a model's tool arguments): its bug, not a fault
        elif name in _INFRA_NAMES or isinstance(
            current, ConnectionError | TimeoutError | EndpointFault
        ):
            return True
        status = getattr(current, "status_code", None)
        if isinstance(status, int) and (status == 429 or status >= 500):
            return True
        # Explicit causes only (`raise X from fault`, as the SDKs wrap transport
        # errors): an agent bug raised while handling some JSONDecodeError is
        # still the agent's bug.
        current = current.__cause__
    return False


_CLIENTS = frozenset(
    {"litellm", "openai", "anthropic", "httpx", "httpcore", "requests", "urllib3", "aiohttp"}
)
"""Packages whose ``json.loads`` of a response body makes a JSONDecodeError the endpoint's."""


def _parsed_by_a_client(exc: BaseException) -> bool:
    """Whether ``exc`` (a JSONDecodeError) was raised parsing a response: the code that called
    into ``json`` is a model client's or ours (the transport), not the agent's. Without a
    traceback (rebuilt in another process) there is no telling, so it counts as the
    endpoint's, as it always did."""
    caller = None
    tb = exc.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module == "json" or module.startswith("json."):
            break
        caller = module
        tb = tb.tb_next
    if caller is None:
        return True
    top = caller.split(".")[0]
    return top in _CLIENTS or (
        top == "evalrunner" and not caller.startswith("evalrunner.reference")
    )


ENDPOINT_REFUSALS = frozenset({"AuthenticationError", "PermissionDeniedError", "NotFoundError"})
"""Answers that mean no model served the call at all: a rejected key (401), no permission
(403), a model the endpoint does not have (404). Configuration, never the agent's behaviour,
and another attempt gets the same answer."""
_NO_KEY = re.compile(r"api_key client option must be set|missing credentials", re.IGNORECASE)


def refusal_hint(exc: BaseException) -> str | None:
    """What to check when a model call was refused outright (:data:`ENDPOINT_REFUSALS`, or a
    client that had no key to send), else None."""
    current: BaseException | None = exc
    # Explicit causes only (as is_infra_error): a refusal an agent's own code was handling
    # when it failed some other way is not this call's answer.
    for _ in range(16):
        if current is None:
            return None
        status = getattr(current, "status_code", None)
        name = type(current).__name__
        if name == "AuthenticationError" or status == 401 or _NO_KEY.search(str(current)):
            return "check the model's API key"
        if name == "PermissionDeniedError" or status == 403:
            return "check that the API key may use this model"
        if name == "NotFoundError" or status == 404:
            return "check the model name and api_base"
        current = current.__cause__
    return None


_REFUSED = "the endpoint refused the call, no model answered"
_NO_KEY_SENT = "the client had no API key to send, no model answered"
_REFUSAL_IN_REASON = re.compile(r"\((check [^;()]+); [^;()]+, no model answered\)")


def _no_key(chain: list[BaseException]) -> bool:
    """The client refused to send the call: it had no key (no server was asked)."""
    return any(_NO_KEY.search(str(each)) for each in chain)


def refusal_advice(reason: str | None) -> str | None:
    """The hint a run's reason carries when its model call was refused outright
    (:func:`refusal_hint`, as the retry loop wrote it into the reason), else None."""
    found = _REFUSAL_IN_REASON.search(reason or "")
    return found.group(1) if found else None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (Retry-After header), if it said."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def backoff(
    attempt: int, policy: RetrySettings, exc: BaseException, rng: random.Random | None = None
) -> float:
    """Wait before retry number ``attempt`` (1-based): exponential, capped, jittered.

    The jitter comes from ``rng`` (tests) or the process's own generator, which Python seeds
    again in a forked child (Ray, multiprocessing), so forked workers do not retry in step.
    Every run used to seed a generator of its own (2.5 KB from the OS, about 8 µs) for a
    jitter most runs never draw.
    """
    wait = float(min(policy.max_backoff_s, policy.backoff_s * (2 ** (attempt - 1))))
    if policy.jitter:
        wait = (rng or random).uniform(0.5 * wait, wait)
    asked = retry_after(exc)
    if asked is not None:
        wait = max(wait, min(asked, policy.max_backoff_s))
    return float(wait)


class InfraLog:
    """What went wrong with endpoints during one run (shared by its sub-agents), and the
    run's bounds: its deadline, and whether it has ended."""

    def __init__(self, policy: RetrySettings | None) -> None:
        self.policy = policy
        self.faults: list[str] = []
        self.final_error: BaseException | None = None
        self.final_reason: str | None = None
        self.max_attempts_used = 1
        self.retries = 0
        self.deadline: float | None = None
        """``time.monotonic()`` by which the run must be over; no attempt is allowed past it."""
        self.last_timeout: float | None = None
        """The timeout the latest attempt was given (for the reasons)."""
        self.rate_wait_s = 0.0
        """Seconds the run's calls waited for a shared rate limit (not the endpoint's latency)."""
        self.retried_s = 0.0
        """Seconds the run's calls spent in attempts that failed and were retried, and in the
        backoff after them: the endpoint's faults, kept out of the run's latency."""
        self._ended = threading.Event()
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Task[object]] = set()
        # Calls under way (attempts, backoffs, rate-limit waits), and whether one was
        # cut off or still under way when the run ended: who held a timed-out run.
        self._in_flight = 0
        self._cut_off = False
        self._busy_at_close: bool | None = None

    @property
    def attempts(self) -> int:
        return self.policy.max_attempts if self.policy else 1

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    # -- the run's bounds -------------------------------------------------------------

    def close(self) -> None:
        """The run is over: refuse its later calls and cancel its in-flight async ones.

        Without this, a timed-out sync agent keeps calling from its thread, and an
        ``asyncio.gather`` sibling of a task that raised keeps its requests going,
        both after the run was recorded (and against a one-request-at-a-time local
        server, at the cost of the next run).
        """
        with self._lock:
            if self._busy_at_close is None:
                self._busy_at_close = self._in_flight > 0 or self._cut_off
        self._ended.set()
        with self._lock:
            tasks, self._tasks = list(self._tasks), set()
        try:
            current = asyncio.current_task()
        except RuntimeError:  # no loop running here
            current = None
        for task in tasks:
            if task is current or task.done():
                continue  # the caller's own task (the run itself) is not ours to cancel
            # Thread-safe: close() may run off the task's loop (a sync agent's own loop);
            # a RuntimeError says that loop is closed, so nothing runs there any more.
            with contextlib.suppress(RuntimeError):
                task.get_loop().call_soon_threadsafe(task.cancel)

    def attempt_deadline(self) -> float | None:
        """Seconds one attempt may take in all (None: no policy, no bound)."""
        if self.policy is None:
            return None
        given = getattr(self.policy, "attempt_deadline_s", None)
        return float(given) if given else 4 * self.policy.request_timeout_s

    @property
    def waiting_on_endpoint(self) -> bool:
        """Whether a model call was under way when the run ended (or is now, while it runs).

        A run that timed out with none was held by the agent's own code.
        """
        if self._busy_at_close is not None:
            return self._busy_at_close
        return self._in_flight > 0 or self._cut_off

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1

    def _leave(self, cut_off: bool = False) -> None:
        with self._lock:
            self._in_flight -= 1
            self._cut_off = self._cut_off or cut_off

    def track(self, task: asyncio.Task[object] | None) -> None:
        """Remember an async task making this run's calls, to cancel it when the run ends."""
        if task is None:
            return
        with self._lock:
            self._tasks = {t for t in self._tasks if not t.done()}
            self._tasks.add(task)

    def attempt_timeout(self, asked: object = None) -> object:
        """The timeout of the next attempt: the policy's per-request timeout, not past the
        run's deadline (rounded up to a whole second), never longer than the agent asked
        (``asked``, litellm's ``timeout``).

        Raises RunEnded once the run is over or its deadline has passed.
        """
        if self.ended:
            raise RunEnded("the run this call belongs to has ended; the call was not sent")
        if asked is not None and not isinstance(asked, int | float):
            return asked  # an httpx.Timeout the agent built itself: its own business
        bounds = [float(asked)] if isinstance(asked, int | float) and asked > 0 else []
        if self.policy is not None:
            bounds.append(self.policy.request_timeout_s)
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise RunEnded("the run's time is up; the call was not sent")
            # Whole seconds, rounded up: litellm keeps one HTTP client per distinct timeout,
            # so a timeout that differs on every call builds a client (and a connection) per
            # call (benchmarks/bench_timeout_clients.py: 1.6x the wall time at concurrency 32).
            # The run's own timeout still ends it at its deadline.
            bounds.append(float(math.ceil(remaining)))
        if not bounds:
            return asked
        self.last_timeout = min(bounds)
        return self.last_timeout

    # -- retries -------------------------------------------------------------------

    def _note_attempt(self, attempt: int) -> None:
        """Remember how many attempts the worst call so far needed (failed or not)."""
        self.max_attempts_used = max(self.max_attempts_used, attempt)

    def _failure(self, attempt: int, exc: Exception, endpoint: str | None) -> float:
        """Seconds to wait before the next attempt; re-raises when giving up."""
        # A call refused for lack of time is the run's timeout, not the endpoint's fault: it
        # is neither retried nor recorded, so a timed-out run names the endpoint's last fault.
        if isinstance(exc, RunEnded) and attempt > 1:
            # The time ran out while this call was retrying: the endpoint's faults held the
            # run, also when this thread saw the deadline before the run's timeout fired
            # and so left the call before the run ended.
            with self._lock:
                self._cut_off = True
        if isinstance(exc, RunEnded) or self.ended:
            raise exc
        hint = refusal_hint(exc)
        if hint is None and not is_infra_error(exc):
            raise exc
        reason = self._reason(exc, endpoint, hint)
        self.faults.append(reason)
        self._note_attempt(attempt)
        if hint is not None or attempt >= self.attempts or self.policy is None:
            self.final_error, self.final_reason = exc, reason
            raise exc
        self.retries += 1
        return backoff(attempt, self.policy, exc)

    def _reason(self, exc: Exception, endpoint: str | None, hint: str | None) -> str:
        """The fault in a line; a refusal (``hint``) also says why no model answered."""
        reason = describe_fault(exc, endpoint, self.last_timeout)
        if hint is None:
            return reason
        # Refused outright: no model answered. The run is infra_error whatever the agent
        # makes of the exception (an agent that crashed on it, or one that caught it and
        # answered something, would otherwise read as behaviour), and not retried.
        return f"{reason} ({hint}; {_NO_KEY_SENT if _no_key(_chain(exc)) else _REFUSED})"

    def _sleep(self, seconds: float) -> None:
        # Wakes early when the run ends, so a stuck run's thread does not linger in a backoff.
        self._ended.wait(seconds)

    def call(self, fn: Callable[[], T], endpoint: str | None = None) -> T:
        """``fn()`` under the retry policy; ``endpoint`` names where it goes, for the reasons."""
        self._enter()
        try:
            attempt = 1
            while True:
                began = time.monotonic()
                try:
                    result = fn()
                except Exception as exc:
                    self._sleep(self._failure(attempt, exc, endpoint))
                    self._retried(began)
                    attempt += 1
                    continue
                self._note_attempt(attempt)
                return result
        finally:
            self._leave()

    def _retried(self, began: float) -> None:
        with self._lock:  # a sync run's calls may retry in several threads at once
            self.retried_s += time.monotonic() - began

    async def acall(self, fn: Callable[[], Awaitable[T]], endpoint: str | None = None) -> T:
        self._enter()
        cut_off = False
        try:
            attempt = 1
            while True:
                began = time.monotonic()
                try:
                    result = await self._bounded(fn)
                except Exception as exc:
                    await asyncio.sleep(self._failure(attempt, exc, endpoint))
                    self._retried(began)
                    attempt += 1
                    continue
                self._note_attempt(attempt)
                return result
        except asyncio.CancelledError:
            cut_off = True  # the run's timeout (or its end) stopped this call mid-way
            raise
        finally:
            self._leave(cut_off)

    async def _bounded(self, fn: Callable[[], Awaitable[T]]) -> T:
        limit = self.attempt_deadline()
        if limit is None:
            return await fn()
        bound = asyncio.timeout(limit)
        try:
            async with bound:
                return await fn()
        except TimeoutError:
            if not bound.expired():
                raise  # the endpoint's own timeout, not ours
            raise AttemptOverran(f"the attempt ran past its deadline of {limit:g} s") from None


def describe(exc: BaseException) -> str:
    """One line for a record's reason field."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


# -- describing an endpoint fault ------------------------------------------------------------

# litellm stacks prefixes ("litellm.InternalServerError: InternalServerError: OpenAIException - ")
# in front of the provider's message, and repeats the message after "Original exception:".
_PREFIX = re.compile(
    r"^(?:(?:(?:litellm\.)?[A-Za-z]*(?:Error|Exception|Timeout)|error)\s*(?::|-)\s*)+"
)
_REPEATS = (" Original exception:", " Error_str:", ", Received response -")

_CHAIN_KINDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("NoKeyForProxy",), "refused by the capture proxy"),
    (("NoCallReachedProxy",), "went around the capture proxy"),
    (("NoUsableChoice", "EndpointFault"), "no usable choice"),
    (("ReadTimeout", "ConnectTimeout", "APITimeoutError", "TimeoutError", "Timeout"), "timeout"),
    (("JSONDecodeError",), "malformed response"),
    (("ConnectionResetError", "BrokenPipeError"), "connection reset"),
    (
        ("RemoteProtocolError", "ReadError", "ConnectError", "APIConnectionError"),
        "connection error",
    ),
    (("MidStreamFallbackError",), "stream broke off"),
)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from or while handling, outermost first."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out and len(out) < 16:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _kind(chain: list[BaseException], timeout: float | None) -> str:
    """'HTTP 503' when the server sent a status; else what went wrong on the way."""
    if _no_key(chain):
        return "no API key"  # litellm calls the client's refusal a 500: no server said so
    status = _http_status(chain)
    if status is not None:
        return status
    names = {type(each).__name__ for each in chain}
    for candidates, kind in _CHAIN_KINDS:
        if names.intersection(candidates):
            return f"no response within {timeout:g} s" if kind == "timeout" and timeout else kind
    status = getattr(chain[0], "status_code", None)
    return f"HTTP {status}" if isinstance(status, int) else "fault"


def _http_status(chain: list[BaseException]) -> str | None:
    """'HTTP 503' from the first httpx status error in the chain that has its response."""
    for each in chain:
        response = getattr(each, "response", None)
        if type(each).__name__ == "HTTPStatusError" and response is not None:
            return f"HTTP {response.status_code}"
    return None


def _message(exc: BaseException) -> str:
    text = " ".join(str(getattr(exc, "message", None) or exc).split())
    for repeat in _REPEATS:
        text = text.split(repeat)[0]
    return _PREFIX.sub("", text).strip()


DEFAULT_BASE = "(given no api_base)"
"""Said after the URL of a call given no api_base, which went where its provider's default is."""


def endpoint_label(model: object, api_base: object) -> str:
    """'openai/gpt-4o-mini at https://host/v1', without credentials in the URL.

    With no ``api_base``, an ``openai/`` or ``anthropic/`` model's call went to litellm's
    default for it (the provider's variable, else its public API): named, since a night
    whose server of its own was never set is a connection error with nothing else to go on.
    """
    name = str(model or "?")
    if isinstance(api_base, str) and api_base:
        return _label(name, api_base)
    default = _default_base(name.partition("/")[0])
    return f"{_label(name, default)} {DEFAULT_BASE}" if default else name


def _default_base(provider: str) -> str | None:
    if provider == "openai":
        env = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        return env or "https://api.openai.com/v1"
    if provider == "anthropic":
        env = os.environ.get("ANTHROPIC_BASE_URL") or os.environ.get("ANTHROPIC_API_BASE")
        return env or "https://api.anthropic.com"
    return None


@functools.lru_cache(maxsize=64)  # every call of a run is labelled; a night has few endpoints
def _label(model: str, api_base: str | None) -> str:
    where = model
    if api_base:
        parts = urlsplit(api_base)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        where += f" at {urlunsplit((parts.scheme, netloc, parts.path, '', ''))}"
    return where


def describe_fault(
    exc: BaseException, endpoint: str | None = None, timeout: float | None = None
) -> str:
    """One line for an endpoint fault: the exception, what happened (status, timeout,
    reset), the endpoint, and the provider's message. ``timeout``: the attempt's, if known.

    ``RateLimitError (HTTP 429) from openai/gpt-4o-mini at https://api.example/v1: slow down``
    """
    chain = _chain(exc)
    head = f"{type(exc).__name__} ({_kind(chain, timeout)})"
    if endpoint:
        head += f" from {endpoint}"
    message = _message(exc)
    if not message:
        message = next((_message(e) for e in chain[1:] if _message(e)), "")
    return f"{head}: {message[:300]}" if message else head
