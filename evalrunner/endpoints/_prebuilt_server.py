"""The embedded model on a prebuilt engine: xllamacpp behind an OpenAI-compatible server.

xllamacpp ships llama.cpp as a manylinux wheel (nothing to compile). Its own server
ignores a chat request's ``tools``, so this one answers ``/v1/chat/completions`` itself:
:mod:`evalrunner.endpoints._chatml_tools` turns each request into constrained raw
completions, which the engine makes in process, one at a time (the model is small and
the machine's cores are shared: concurrency buys nothing). Streaming requests get the
finished answer as chunks.

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
    """Raw completions of the loaded model (:class:`~._chatml_tools.Complete`)."""

    def __init__(self, server: Any, seed: int) -> None:
        self._server = server
        # Each request's seed is drawn from the session's, so a fixed --seed replays a
        # session's requests exactly, and sessions without one differ.
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
            body.setdefault("seed", self._seeds.randrange(2**31))
            body["seed"] = int(body["seed"])
            out = self._server.handle_completions(body)
        return _completion(out)


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


def load(model_path: str, *, n_ctx: int, threads: int | None) -> Any:
    """The xllamacpp server with the GGUF loaded (its own HTTP listener stays unused)."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.n_ctx = n_ctx
    params.n_parallel = 1
    # Half the cores, as the other engine's default: llama.cpp threads wait on each other,
    # so all cores of a shared machine decode far slower whenever anything else runs.
    params.cpuparams.n_threads = threads or max(1, (os.cpu_count() or 2) // 2)
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
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    threading.Thread(target=_watch, args=(args.parent, args.log_dir), daemon=True).start()
    import uvicorn

    try:
        server = load(args.model, n_ctx=args.n_ctx, threads=args.threads)
    except RuntimeError as exc:  # xllamacpp's whole word on a file it cannot load
        sys.exit(f"Failed to load model from file: {args.model} ({exc})")
    engine = Engine(server, args.seed)
    uvicorn.run(app(engine, args.alias), host="127.0.0.1", port=args.port, log_level="warning")
    sys.exit(0)


if __name__ == "__main__":
    main()
