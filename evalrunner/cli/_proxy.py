"""``evalrunner proxy``: run the capture proxy until Ctrl-C (register with ``main.add_command``)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import click

from evalrunner._net import is_loopback
from evalrunner.core._request_key import DEFAULT_FINGERPRINT
from evalrunner.endpoints._endpoints import check_model
from evalrunner.errors import ConfigError, EvalrunnerError
from evalrunner.proxy._recording import Recording
from evalrunner.proxy._runs import Mode, ProxyRunResult
from evalrunner.proxy._server import ProxyServer, new_token
from evalrunner.proxy._upstream import Upstream

_DIR = click.Path(file_okay=False, path_type=Path)


def _mode(record: Path | None, replay: Path | None) -> tuple[Mode, Path | None]:
    if record and replay:
        raise ConfigError("--record and --replay exclude each other; pick one")
    if record:
        return "record", record
    if replay:
        if not replay.is_dir():
            raise ConfigError(
                f"--replay {replay}: no such directory; record into it first with --record"
            )
        # Every recording read before anything is served: a damaged one is one line
        # now, not an HTTP 500 (which SDKs retry) for each request of its run.
        for path in sorted(replay.glob("*.proxy.json")):
            Recording.load(path)
        return "replay", replay
    return "passthrough", None


def _upstream(
    model: str | None,
    api_base: str | None,
    key_env: str | None,
    llama_cpp: bool,
    direct: bool | None,
) -> Upstream | None:
    if model is None:
        return None
    if not llama_cpp:
        check_model(model, "--model")
    key = None
    if key_env:
        key = os.environ.get(key_env)
        if not key:
            raise ConfigError(f"--api-key-env {key_env}: that environment variable is not set")
    return Upstream(model, api_base=api_base, api_key=key, llama_cpp=llama_cpp, direct=direct)


def _report(result: ProxyRunResult) -> str:
    parts = [f"run {result.run_id}: {result.model_calls} model call(s)"]
    if result.recording_path is not None:
        parts.append(f"recorded to {result.recording_path}")
    if result.infra_error is not None:
        parts.append(f"infra error: {result.infra_error}")
    if result.replay_errors:
        parts.append(f"{len(result.replay_errors)} replay mismatch(es)")
    if result.unused_recorded:
        parts.append(f"{len(result.unused_recorded)} recorded call(s) unused")
    return "; ".join(parts)


@click.command("proxy")
@click.option(
    "--record", "record_dir", type=_DIR, help="Forward upstream and record every run into DIR."
)
@click.option(
    "--replay", "replay_dir", type=_DIR, help="Answer only from the recordings in DIR (offline)."
)
@click.option("--model", help="Upstream litellm model string, or 'local' for the embedded model.")
@click.option(
    "--api-base", help="Upstream endpoint, for OpenAI-compatible servers (openai/<name>)."
)
@click.option("--api-key-env", metavar="VAR", help="Environment variable holding the upstream key.")
@click.option(
    "--direct/--litellm",
    default=None,
    help="Reach the upstream directly (POST to an OpenAI-compatible --api-base, or Anthropic "
    "Messages for anthropic/<name>) or through litellm (any provider). Default: directly for "
    "openai/<name> at an --api-base, the embedded model and anthropic/<name>; through litellm "
    "otherwise.",
)
@click.option(
    "--llama-cpp", is_flag=True, help="Smooth llama.cpp server quirks (automatic for local)."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8787,
    show_default=True,
    help="Port to listen on (0: any free one).",
)
@click.option(
    "--token",
    envvar="EVALRUNNER_PROXY_TOKEN",
    help=(
        "Bearer token every request must carry (env EVALRUNNER_PROXY_TOKEN). Default on "
        "loopback: a new one each start, printed as the agents' API key."
    ),
)
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (needs --token).")
@click.option(
    "--match-include",
    multiple=True,
    metavar="FIELD",
    help="Also match FIELD on replay (e.g. temperature).",
)
@click.option(
    "--match-ignore",
    multiple=True,
    metavar="FIELD",
    help="Do not match FIELD on replay (e.g. tools).",
)
@click.option(
    "--max-body-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=32,
    show_default=True,
    help="Largest request body accepted, in MiB; a bigger one gets 413.",
)
def proxy(
    record_dir: Path | None,
    replay_dir: Path | None,
    model: str | None,
    api_base: str | None,
    api_key_env: str | None,
    direct: bool | None,
    llama_cpp: bool,
    host: str,
    port: int,
    token: str | None,
    allow_remote: bool,
    match_include: tuple[str, ...],
    match_ignore: tuple[str, ...],
    max_body_mb: float,
) -> None:
    """Serve OpenAI and Anthropic APIs for any agent: record, replay or capture its model calls.

    Point an agent at the printed base URL (per run: .../runs/<run-id>/v1);
    Ctrl-C stops the proxy and writes the recordings. A replay in which a request had no
    recorded response exits 1.
    """
    evicted: list[ProxyRunResult] = []

    def finished_early(result: ProxyRunResult) -> None:
        evicted.append(result)
        click.echo(f"{_report(result)} (finished: runs kept open at once are bounded)")

    try:
        mode, directory = _mode(record_dir, replay_dir)
        if mode == "replay" and (model or api_base):
            click.echo(
                "note: --replay answers from the recordings only; --model and "
                "--api-base are not used",
                err=True,
            )
        # Without --token, a token of its own for this start (printed below as the
        # agents' API key); beyond loopback the user must choose one (ProxyServer says so).
        chosen = token is not None
        if not chosen and is_loopback(host, listening=True):
            token = new_token()
        server = ProxyServer(
            mode,
            directory,
            _upstream(model, api_base, api_key_env, llama_cpp, direct),
            host=host,
            port=port,
            token=token,
            allow_remote=allow_remote,
            fingerprint=DEFAULT_FINGERPRINT.extended(match_include, match_ignore),
            max_body_bytes=int(max_body_mb * 1024 * 1024),
            on_evict=finished_early,
        )
        finished = _serve(server, mode, directory, chosen)
    except EvalrunnerError as exc:
        # The same one line and exit code as every other evalrunner command.
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    missed = sum(len(r.replay_errors) for r in [*evicted, *finished])
    if missed:
        # A replay that could not answer a request fails, as pytest's replay does: a shell
        # or Node team's offline check reads the exit, not the lines.
        click.echo(f"replay: {missed} request(s) had no recorded response (exit 1)", err=True)
        sys.exit(1)


def _serve(
    server: ProxyServer, mode: Mode, directory: Path | None, token_chosen: bool
) -> list[ProxyRunResult]:
    """Serve until Ctrl-C or SIGTERM; the runs still open then, finished and reported."""
    # A CI job or supervisor stops with SIGTERM: write the recordings then too.
    kept = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with server:
            try:  # from the first line: a Ctrl-C as soon as it says "Ctrl-C" stops cleanly
                _announce(server, mode, directory, token_chosen)
                # In short sleeps, not one wait: a signal the kernel hands to one of the
                # server's threads only trips a flag, which a main thread blocked for good
                # never reads (1 stop in ~60 hung under load); a sleep that returns reads it.
                while True:
                    time.sleep(0.2)
            except KeyboardInterrupt:
                click.echo("stopping")
            finished = [server.finish_run(run_id) for run_id in server.open_runs()]
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)
    used = [result for result in finished if result.model_calls]
    for result in used:
        click.echo(_report(result))
    if not used:
        click.echo("no model call reached the proxy")
    return finished


def _announce(server: ProxyServer, mode: Mode, directory: Path | None, token_chosen: bool) -> None:
    where = f" ({directory})" if directory else ""
    click.echo(f"evalrunner proxy: {mode}{where}, upstream {server.upstream_line()}")
    click.echo(f"base URL: {server.base_url}/v1   per run: {server.base_url}/runs/<run-id>/v1")
    for name, value in server.run_env().items():
        if not name.endswith(("_BASE_URL", "_API_BASE", "_API_KEY")):
            continue  # per-run settings (an empty cache directory) are for runs it starts
        # A token the user chose is theirs to know; one made for this start is shown.
        shown = "<your --token>" if token_chosen and value == server.token else value
        click.echo(f"export {name}={shown}")
    click.echo("Ctrl-C to stop.")


def _interrupt(signum: int, frame: object) -> None:
    # The first signal stops; the ones after it must not abort the stopping: a CI job or
    # `timeout` signals the whole process group and then the proxy again, and a second
    # KeyboardInterrupt while the recordings were written lost them ("Aborted!", exit 1).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _already_stopping)
    raise KeyboardInterrupt


def _already_stopping(signum: int, frame: object) -> None:
    click.echo("already stopping: writing the recordings", err=True)
