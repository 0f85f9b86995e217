"""The embedded model on a prebuilt engine: xllamacpp behind an OpenAI-compatible server.

xllamacpp ships llama.cpp as a manylinux wheel (nothing to compile). Its own server
ignores a chat request's ``tools``, so this one answers ``/v1/chat/completions`` itself:
:mod:`evalrunner.endpoints._chatml_tools` turns each request into constrained raw
completions, which the engine makes in process, several at once: each of ``--copies``
copies of the model decodes its ``--slots`` completions' tokens in one batch (a 135M
model's step costs about the same for four tokens as for one), on ``--threads`` threads.
Streaming requests get the finished answer as chunks.

Run by :class:`~evalrunner.endpoints._local_model.LocalModelServer` in a child process::

    python -m evalrunner.endpoints._prebuilt_server PARENT_PID LOG_DIR --model PATH --port N ...

It exits when its parent does (a watchdog thread), as the other engine's child does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from evalrunner.endpoints._chatml_tools import Completion, RequestError, chat, stream_chunks

# The sampling the other engine's server applies when a request sets none (llama-cpp-python's
# chat defaults), so both engines answer the same request alike.
_DEFAULTS = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.1}


class Engine:
    """Raw completions of the loaded model (:class:`~._chatml_tools.Complete`) on one or
    more copies of it, each completion sent to the copy with the fewest in flight (of
    those, the one whose recent prompts share the longest start with it: its prompt cache
    holds that part)."""

    def __init__(self, servers: Sequence[Any], seed: int) -> None:
        self._servers = list(servers)
        self._busy = [0] * len(self._servers)
        self._recent: list[list[str]] = [[] for _ in self._servers]
        # Each request's seed is drawn from the session's, so a fixed --seed replays a
        # session's requests exactly, and sessions without one differ. Requests arriving
        # one after another draw them (and pick their copy) in order; concurrent ones in
        # the order they arrive, so only a sequential session replays exactly.
        self._seeds = random.Random(seed)
        self._lock = threading.Lock()

    def __call__(
        self,
        prompt: str,
        *,
        temperature: float,
        stop: Sequence[str],
        max_tokens: int | None = None,
        grammar: str | None = None,
        json_schema: Mapping[str, Any] | None = None,
        sampling: Mapping[str, float] | None = None,
    ) -> Completion:
        body: dict[str, Any] = {
            **_DEFAULTS,
            **(sampling or {}),
            "prompt": prompt,
            "temperature": temperature,
            "stop": list(stop),
            "n_predict": max_tokens or -1,
            "cache_prompt": True,
        }
        if grammar is not None:
            body["grammar"] = grammar
        if json_schema is not None:
            body["json_schema"] = dict(json_schema)
        with self._lock:
            body["seed"] = int(body.get("seed", self._seeds.randrange(2**31)))
            copy = self._pick(prompt)
        try:
            # Outside the lock: each copy batches its concurrent completions in its slots.
            return _completion(self._servers[copy].handle_completions(body))
        finally:
            with self._lock:
                self._busy[copy] -= 1

    def _pick(self, prompt: str) -> int:
        """The copy to send ``prompt`` to, counted busy (call with the lock held)."""

        def shared(i: int) -> int:
            # Characters, not path parts: the start of the prompt its cache holds.
            starts = (os.path.commonprefix([prompt, p]) for p in self._recent[i])  # noqa: RUF071
            return max(map(len, starts), default=0)

        copy = min(range(len(self._servers)), key=lambda i: (self._busy[i], -shared(i)))
        self._busy[copy] += 1
        self._recent[copy] = [prompt, *self._recent[copy][: _REMEMBERED - 1]]
        return copy


_REMEMBERED = 8
"""Prompts remembered per copy for :meth:`Engine._pick` (about what its slots cache)."""


def _completion(out: Any) -> Completion:
    if not isinstance(out, Mapping) or "error" in out:
        error = out.get("error") if isinstance(out, Mapping) else out
        message = error.get("message") if isinstance(error, Mapping) else error
        raise RequestError(f"the model refused the completion: {message}")
    choice = out["choices"][0]
    usage = out.get("usage", {})
    return Completion(
        text=str(choice.get("text", "")),
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
        finish_reason=str(choice.get("finish_reason") or "stop"),
    )


def load(model_path: str, *, n_ctx: int, threads: int, slots: int = 1) -> Any:
    """The xllamacpp server with the GGUF loaded (its own HTTP listener stays unused):
    ``slots`` completions at a time, each with a context of ``n_ctx`` tokens."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.n_parallel = slots
    params.n_ctx = n_ctx * slots  # llama.cpp divides its context among the slots
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    # No extra buffer types (weight repacking, AMX), as for the other engine: a 135M model
    # loses nothing worth having without them.
    params.no_extra_bufts = True
    return xllamacpp.Server(params)


def app(engine: Engine, alias: str) -> Any:
    """The starlette application: ``GET /v1/models`` and ``POST /v1/chat/completions``."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def models(_: Request) -> Response:
        entry = {"id": alias, "object": "model", "created": 0, "owned_by": "evalrunner"}
        return JSONResponse({"object": "list", "data": [entry]})

    async def completions(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict):
                raise RequestError("expected a JSON object")
            answer = await run_in_threadpool(chat, body, engine, alias)
        except (RequestError, json.JSONDecodeError) as exc:
            error = {"message": str(exc), "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=400)
        if not body.get("stream"):
            return JSONResponse(answer)
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(_events(answer, usage), media_type="text/event-stream")

    routes = [
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", completions, methods=["POST"]),
    ]
    return Starlette(routes=routes)


async def _events(answer: Mapping[str, Any], usage: bool) -> AsyncIterator[str]:
    for chunk in stream_chunks(answer, usage):
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


def _watch(parent: int, log_dir: str) -> None:
    """Exit when the parent is gone (killed, crashed): nobody else would stop this server."""
    while os.getppid() == parent:
        time.sleep(0.5)
    shutil.rmtree(log_dir, ignore_errors=True)
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="evalrunner.endpoints._prebuilt_server")
    parser.add_argument("parent", type=int)
    parser.add_argument("log_dir")
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--copies", type=int, default=1)
    args = parser.parse_args(argv)
    threading.Thread(target=_watch, args=(args.parent, args.log_dir), daemon=True).start()
    import uvicorn

    try:
        layout = {"n_ctx": args.n_ctx, "threads": args.threads, "slots": args.slots}
        servers = [load(args.model, **layout) for _ in range(args.copies)]
    except RuntimeError as exc:  # xllamacpp's whole word on a file it cannot load
        sys.exit(f"Failed to load model from file: {args.model} ({exc})")
    engine = Engine(servers, args.seed)
    uvicorn.run(app(engine, args.alias), host="127.0.0.1", port=args.port, log_level="warning")
    sys.exit(0)


if __name__ == "__main__":
    main()
