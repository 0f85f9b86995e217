"""Agents the live-runner tests name in their suites (``runner_agents:<name>``).

Each takes ``(task, ctx)`` like any suite agent and calls litellm through the
module attribute, so capture sees every call. They do nothing clever: what
the endpoint answers (tests/fake_endpoint.py) decides how a run ends.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import litellm

from evalrunner.examples import TOOLS
from evalrunner.reference_agent import AgentResult, arun_agent, run_agent
from evalrunner.suite._contract import RunContext

if TYPE_CHECKING:
    from evalrunner.live._driver import RunReport

# The fake endpoint is on loopback; a proxy from the environment must not swallow those calls.
for _var in ("NO_PROXY", "no_proxy"):
    _have = [p for p in os.environ.get(_var, "").split(",") if p]
    os.environ[_var] = ",".join(dict.fromkeys([*_have, "127.0.0.1", "localhost"]))

CALL_TIMEOUT_S = 0.5
"""Per-call timeout of :func:`timed_agent`: a "slow" fault longer than this is a litellm.Timeout."""

APOLOGY = "Sorry, the service is unavailable right now."


def _tools(ctx: RunContext) -> dict[str, Any]:
    return {name: TOOLS[name] for name in ctx.tools}


def _messages(task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": task}]


def prompted_agent(task: str, ctx: RunContext) -> str | None:
    """One call whose system prompt is ``AGENT_SYSTEM`` (default "Answer briefly."): a PR
    that changes only the prompt."""
    system = os.environ.get("AGENT_SYSTEM", "Answer briefly.")
    messages = [{"role": "system", "content": system}, {"role": "user", "content": task}]
    response = litellm.completion(messages=messages, timeout=CALL_TIMEOUT_S, **ctx.litellm_kwargs())
    content: str | None = response.choices[0].message.content
    return content


def tool_agent(task: str, ctx: RunContext) -> AgentResult:
    """The reference loop (sync, in a worker thread); tools offered on every turn."""
    return run_agent(task, ctx, _tools(ctx), max_tool_rounds=ctx.max_turns)


async def atool_agent(task: str, ctx: RunContext) -> AgentResult:
    """The reference loop over litellm.acompletion."""
    return await arun_agent(task, ctx, _tools(ctx), max_tool_rounds=ctx.max_turns)


TASKS_SEEN: list[int] = []
"""What :func:`task_counting_agent` saw: the event loop's tasks as each of its runs began."""


async def task_counting_agent(task: str, ctx: RunContext) -> AgentResult:
    """:func:`atool_agent`, noting in :data:`TASKS_SEEN` how many tasks the loop holds."""
    TASKS_SEEN.append(len(asyncio.all_tasks()))
    return await atool_agent(task, ctx)


FROZEN_SEEN: list[int] = []
"""What :func:`freeze_noting_agent` saw: the objects kept from the collector as each run began."""


async def freeze_noting_agent(task: str, ctx: RunContext) -> AgentResult:
    """:func:`atool_agent`, noting in :data:`FROZEN_SEEN` ``gc.get_freeze_count()``."""
    FROZEN_SEEN.append(gc.get_freeze_count())
    return await atool_agent(task, ctx)


def three_calls(task: str, ctx: RunContext) -> str | None:
    """Two tool rounds, then an answer without tools: three model calls when the model obliges."""
    return run_agent(task, ctx, _tools(ctx), max_tool_rounds=2).answer


async def athree_calls(task: str, ctx: RunContext) -> str | None:
    return (await arun_agent(task, ctx, _tools(ctx), max_tool_rounds=2)).answer


def timed_agent(task: str, ctx: RunContext) -> str | None:
    """One call with a short per-call timeout."""
    kwargs = ctx.litellm_kwargs()
    response = litellm.completion(messages=_messages(task), timeout=CALL_TIMEOUT_S, **kwargs)
    content: str | None = response.choices[0].message.content
    return content


async def stream_agent(task: str, ctx: RunContext) -> str:
    """One streamed call over litellm.acompletion, reassembled from the deltas."""
    stream = await litellm.acompletion(
        messages=_messages(task), stream=True, timeout=5, **ctx.litellm_kwargs()
    )
    parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    return "".join(parts)


def sync_stream_agent(task: str, ctx: RunContext) -> str:
    """One streamed call over litellm.completion."""
    stream = litellm.completion(
        messages=_messages(task), stream=True, timeout=5, **ctx.litellm_kwargs()
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def catching_agent(task: str, ctx: RunContext) -> str | None:
    """Catches every exception around its model call and answers anyway, as many agents do."""
    try:
        return timed_agent(task, ctx)
    except Exception:  # the point of this agent
        return APOLOGY


async def catching_stream_agent(task: str, ctx: RunContext) -> str:
    """The streaming agent, catching every exception while it reads the stream."""
    try:
        return await stream_agent(task, ctx)
    except Exception:  # the point of this agent
        return APOLOGY


def nonce_agent(task: str, ctx: RunContext) -> str | None:
    """One call whose system message carries a fresh id, so the endpoint can tell runs apart."""
    kwargs = ctx.litellm_kwargs()
    messages = [
        {"role": "system", "content": f"Answer briefly. (run {uuid.uuid4().hex})"},
        {"role": "user", "content": task},
    ]
    response = litellm.completion(messages=messages, timeout=5, **kwargs)
    content: str | None = response.choices[0].message.content
    return content


def plain_agent(task: str, ctx: RunContext) -> str | None:
    """One call with no timeout of its own, as the reference agent makes them."""
    response = litellm.completion(messages=_messages(task), **ctx.litellm_kwargs())
    content: str | None = response.choices[0].message.content
    return content


def past_capture_agent(task: str, ctx: RunContext) -> str | None:
    """One call through litellm's module, one through its own function, as a module that
    ran `from litellm import completion` before capture holds it."""
    from litellm.main import completion as bound_before_capture

    litellm.completion(messages=_messages(task), **ctx.litellm_kwargs())
    response = bound_before_capture(messages=_messages(task), **ctx.litellm_kwargs())
    content: str | None = response.choices[0].message.content
    return content


def server_killing_agent(task: str, ctx: RunContext) -> str | None:
    """Kills the server its model is served by (SIGKILL, as the OOM killer would), then calls
    it. Found by the ``--port`` on its command line: the embedded model's server."""
    port = (ctx.api_base or "").rstrip("/").removesuffix("/v1").rsplit(":", 1)[-1]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if b"--port" in argv and argv[argv.index(b"--port") + 1 :][:1] == [port.encode()]:
            os.kill(int(cmdline.parent.name), 9)
    return plain_agent(task, ctx)


class _Stuck:
    """:func:`stuck_once_agent`'s switch: after ``arm()``, the next run blocks until ``release()``."""

    def __init__(self) -> None:
        self._armed = threading.Lock()
        self._released = threading.Event()

    def arm(self) -> None:
        self._released.clear()
        self._armed = threading.Lock()

    def release(self) -> None:
        self._released.set()

    def block_once(self) -> None:
        if self._armed.acquire(blocking=False):
            self._released.wait(60)


STUCK = _Stuck()


def stuck_once_agent(task: str, ctx: RunContext) -> str | None:
    """After STUCK.arm(), the first run blocks in agent code, outside any model call, until
    STUCK.release(); the others (and that one, once released) make one model call."""
    STUCK.block_once()
    return plain_agent(task, ctx)


def crashing_agent(task: str, ctx: RunContext) -> str | None:
    """Calls the model, then fails the way agent code does."""
    answer = timed_agent(task, ctx)
    raise ValueError(f"tool exploded after the model said {answer!r}")


def looping_agent(task: str, ctx: RunContext) -> str | None:
    """Calls the model once, then spins in its own code past any run timeout."""
    timed_agent(task, ctx)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        time.sleep(0.01)
    return "never in time"


async def alooping_agent(task: str, ctx: RunContext) -> str | None:
    await athree_calls(task, ctx)
    await asyncio.sleep(3)
    return "never in time"


async def blocking_agent(task: str, ctx: RunContext) -> str | None:
    """An async agent that blocks the event loop (a synchronous sleep where it should
    await) past its run's timeout."""
    await athree_calls(task, ctx)
    time.sleep(4)  # the blocking is the point
    await asyncio.sleep(0.01)  # its next await is where its own timeout takes it
    return "Paris, late"


async def patient_agent(task: str, ctx: RunContext) -> AgentResult:
    """An async agent that waits a little, well inside its run's timeout, then answers."""
    for _ in range(10):
        await asyncio.sleep(0.1)
    return await atool_agent(task, ctx)


def exiting_agent(task: str, ctx: RunContext) -> str | None:
    """Calls the model, then ends the process the way a script's main() does."""
    timed_agent(task, ctx)
    sys.exit(3)


async def aexiting_agent(task: str, ctx: RunContext) -> str | None:
    await athree_calls(task, ctx)
    sys.exit("fatal: config missing")


class Abort(BaseException):
    """A library's own "stop everything" (not an Exception, so ``except Exception`` misses it)."""


def interrupting_agent(task: str, ctx: RunContext) -> str | None:
    """Calls the model, then raises KeyboardInterrupt itself (no signal came)."""
    timed_agent(task, ctx)
    raise KeyboardInterrupt("the agent's own")


async def ainterrupting_agent(task: str, ctx: RunContext) -> str | None:
    await athree_calls(task, ctx)
    raise KeyboardInterrupt("the agent's own")


async def cancelling_agent(task: str, ctx: RunContext) -> str | None:
    """An inner task the agent cancels, awaited without care: CancelledError out of it."""
    await athree_calls(task, ctx)
    inner = asyncio.ensure_future(asyncio.sleep(5))
    inner.cancel()
    await inner
    return "never"


def aborting_agent(task: str, ctx: RunContext) -> str | None:
    timed_agent(task, ctx)
    raise Abort("give up")


def wandering_agent(task: str, ctx: RunContext) -> AgentResult:
    """A coding agent's habit: it moves the process into its workspace and stays there."""
    workspace = Path(os.environ["WANDER_TO"])
    workspace.mkdir(parents=True, exist_ok=True)
    os.chdir(workspace)
    return tool_agent(task, ctx)


def leaky_crashing_agent(task: str, ctx: RunContext) -> str | None:
    """Crashes with its API key in the message, as a careless error path would."""
    timed_agent(task, ctx)
    raise RuntimeError(f"upstream refused key {os.environ['OPENAI_API_KEY']}")


# -- helpers the runner tests share (not agents) --------------------------------------

FAKE_MODEL = "openai/fake"
FAKE_KEY = "sk-fake-not-a-secret"
# Short retries and timeouts keep fault tests to fractions of a second.
FAST_SETTINGS: dict[str, Any] = {
    "models": [FAKE_MODEL],
    "runs": 1,
    "concurrency": 4,
    "timeout_s": 2,
    "temperature": 0.0,
    "max_turns": 3,
    "retry": {"max_attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05},
}


def write_suite(
    directory: Any, name: str, scenarios: list[dict[str, Any]], **settings: Any
) -> Path:
    """Write ``<directory>/<name>.yaml`` (FAST_SETTINGS overridden by ``settings``); return its path."""
    from pathlib import Path

    import yaml

    doc = {"format_version": 1, "name": name, **FAST_SETTINGS, **settings, "scenarios": scenarios}
    path = Path(directory) / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def fake_pool(api_base: str) -> Any:
    """An EndpointPool that sends every model string to the fake endpoint at ``api_base``."""
    from evalrunner.endpoints._endpoints import Endpoint, EndpointPool

    class FakePool(EndpointPool):
        def resolve(self, model: str) -> Endpoint:
            return Endpoint(label=model, model=model, api_base=api_base, api_key=FAKE_KEY)

    return FakePool()


def one_scenario_night(tmp_path: Path, api_base: str, agent: str, **settings: Any) -> RunReport:
    """Run a suite of one scenario, ``runner_agents:<agent>``, against ``api_base`` into
    ``tmp_path / "out"``; ``settings`` override the suite's (runs, concurrency, ...)."""
    import io

    from suite_runs import run_suite

    from evalrunner.suite._loader import load_suite

    scenario = {"id": "s", "agent": f"runner_agents:{agent}", "input": "Capital of France?"}
    path = write_suite(tmp_path, "night", [scenario], **settings)
    return asyncio.run(
        run_suite(
            load_suite(path),
            out=tmp_path / "out",
            pool=fake_pool(api_base),
            progress_stream=io.StringIO(),
        )
    )


def fake_env(api_base: str) -> dict[str, str]:
    """Environment for an ``evalrunner`` subprocess that talks to the fake endpoint."""
    from pathlib import Path

    tests = str(Path(__file__).resolve().parent)  # tests/support: the agents subprocesses import
    env = dict(os.environ)
    env.update(
        EVALRUNNER_API_BASE=api_base,
        OPENAI_API_KEY=FAKE_KEY,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        PYTHONPATH=os.pathsep.join(p for p in (tests, env.get("PYTHONPATH", "")) if p),
    )
    return env
