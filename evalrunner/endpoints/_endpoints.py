"""Which model endpoints a run talks to.

A model string is any litellm model (``openai/gpt-4o-mini``,
``anthropic/claude-...``; keys come from the provider's usual environment
variable), or ``local`` for the embedded SmolLM2 server, which is started on
first use and stopped when the pool closes (also on errors and Ctrl-C).
With no model named anywhere (CLI, suite, ``EVALRUNNER_MODEL``) the embedded
model is used. Every model string is resolved with litellm before any run
(:func:`check_model`): an unknown provider is a one-line configuration error,
not a night of crashed runs.
"""

from __future__ import annotations

import difflib
import os
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from evalrunner._net import no_proxy
from evalrunner._redact import register_secret
from evalrunner.endpoints._pricing import Price
from evalrunner.errors import ConfigError

if TYPE_CHECKING:
    from evalrunner.endpoints._local_model import LocalModelServer
    from evalrunner.suite._settings import Suite

LOCAL = "local"
KEYLESS = "evalrunner-no-key"
"""The key sent to a keyless OpenAI-compatible server of the user's own (llama.cpp, vLLM, a
gateway): litellm's OpenAI client refuses to send without one; such a server ignores it.
Never a secret."""


def api_key_for(model: str, api_base: str | None, api_key: str | None = None) -> str | None:
    """The key to send: ``api_key``; else, for an ``openai/`` model at a server of the user's
    own with no ``OPENAI_API_KEY`` either, :data:`KEYLESS`; else None (litellm finds it)."""
    if api_key:
        return api_key
    keyless = api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY")
    return KEYLESS if keyless else None


Notify = Callable[[str], None]
"""Where one-line notices go (the CLI: stderr)."""


@dataclass(frozen=True)
class Endpoint:
    """A model string plus where to reach it. ``label`` is what records and reports show."""

    label: str
    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_concurrency: int | None = None
    """Most runs against it at a time (the embedded server: the requests it decodes at once)."""
    per_node: bool = False
    """The embedded model on a Ray cluster: served on every node, and the worker running a
    job fills in ``api_base`` with its own node's server (None until then)."""
    price: Price | None = None
    """What its tokens cost (``_pricing.price_of``); None: unpriced."""

    def __post_init__(self) -> None:
        register_secret(self.api_key)  # redacted wherever it shows up (errors, tracebacks)

    def litellm_kwargs(self) -> dict[str, Any]:
        """Where ``litellm.completion`` reaches this model (parameters it does not take
        dropped), for a request evalrunner sends itself: the sentinel's, a judge's."""
        kwargs: dict[str, Any] = {"model": self.model, "drop_params": True}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        return kwargs


def _no_notice(text: str) -> None:
    pass


# Providers litellm names by the model string's prefix alone: no lookup can fail for them.
_PLAIN_PROVIDERS = frozenset({"openai", "anthropic"})


def check_model(model: str, where: str) -> None:
    """Resolve ``model`` with litellm; an unknown provider is a ConfigError naming ``where``."""
    if model == LOCAL:
        return
    example = "write 'provider/model', e.g. 'openai/gpt-4o-mini', or 'local' for the embedded model"
    if not model.strip():
        raise ConfigError(f"{where}: the model is empty; {example}")
    prefix, _, rest = model.partition("/")
    if prefix in _PLAIN_PROVIDERS and rest.strip():
        return  # litellm would say the same; its import costs seconds (the proxy's start)
    from evalrunner._litellm import import_litellm

    litellm = import_litellm()
    try:
        name = str(litellm.get_llm_provider(model)[0])
    except Exception:  # litellm raises BadRequestError (and prints nothing, debug info off)
        name = None
    if name is not None and name.strip():
        return
    what = "no model name after the provider" if name is not None else _unknown(model, litellm)
    raise ConfigError(f"{where}: unknown model {model!r}: {what}; {example}")


def _unknown(model: str, litellm: Any) -> str:
    """Why litellm finds no provider for ``model``, with the closest name it knows."""
    prefix, slash, _ = model.partition("/")
    if slash:
        providers = [str(getattr(p, "value", p)) for p in litellm.provider_list]
        close = difflib.get_close_matches(prefix, providers, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"litellm knows no provider {prefix!r}{hint}" if prefix else "no provider given"
    close = difflib.get_close_matches(model, list(litellm.model_cost), n=1)
    return "litellm cannot tell its provider" + (f"; did you mean {close[0]!r}?" if close else "")


_PLAIN_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def missing_keys(model: str) -> list[str]:
    """The API key variables ``model``'s provider reads that are not set here (``evalrunner
    validate``'s note: without them every run of a night is refused by the endpoint).

    Only ``*_API_KEY`` variables: a provider's base URL has a default, and cloud credentials
    may come from a profile or a role that no variable shows. An ``openai/`` model at
    ``EVALRUNNER_API_BASE`` (a server of the user's own) needs none.
    """
    prefix, _, _ = model.partition("/")
    if model == LOCAL or (prefix == "openai" and os.environ.get("EVALRUNNER_API_BASE")):
        return []
    if prefix in _PLAIN_KEYS:
        needed = [_PLAIN_KEYS[prefix]]
    else:
        from evalrunner._litellm import import_litellm

        try:
            found = import_litellm().validate_environment(model=model)
        except Exception:  # litellm's own failure for a model it resolves: nothing to say
            return []
        needed = list(found.get("missing_keys") or [])
    return [k for k in needed if k.endswith("_API_KEY") and not os.environ.get(k)]


def _where(suite: Suite, *loc: str | int) -> str:
    """'file:line: ' of the suite file's field at ``loc`` (the file alone without a line)."""
    from evalrunner.suite._loader import field_line

    shown = str(suite.path) if suite.path else suite.name
    line = field_line(suite.path, loc) if suite.path else None
    return f"{shown}:{line}: " if line else f"{shown}: "


def check_suite_models(suite: Suite) -> None:
    """Every model a suite file names resolves (``evalrunner validate``)."""
    for j, model in enumerate(suite.spec.models):
        check_model(model, _where(suite, "models", j) + f"models[{j}]")
    for i, entry in enumerate(suite.spec.scenarios):
        if "models" in entry.model_fields_set:
            for j, model in enumerate(entry.models):
                field_name = f"scenarios[{i}] (id '{entry.id}').models[{j}]"
                check_model(model, _where(suite, "scenarios", i, "models", j) + field_name)
    check_judge_models(suite)


def check_judge_models(suite: Suite) -> None:
    """Every judge model a suite names resolves (whatever models the runs use)."""
    for i, entry in enumerate(suite.spec.scenarios):
        judge = entry.checks.judge
        if judge is not None and judge.model:
            where = _where(suite, "scenarios", i, "checks", "judge", "model")
            check_model(judge.model, f"{where}scenarios[{i}] (id '{entry.id}').checks.judge.model")


def check_requested_models(suite: Suite, cli: Sequence[str], models: Sequence[str]) -> None:
    """The models a night will use resolve, each blamed on where it came from.

    ``cli``: ``--model`` options; ``models``: every model label the plan uses.
    """
    if cli:
        for model in cli:
            check_model(model, "--model")
        check_judge_models(suite)
    else:
        check_suite_models(suite)
        from_env = set(models) - {m for s in suite.scenarios for m in s.models} - {LOCAL}
        for model in sorted(from_env):
            check_model(model, "EVALRUNNER_MODEL")
    check_api_base(models)


def check_api_base(models: Sequence[str]) -> None:
    """``EVALRUNNER_API_BASE``, when an ``openai/...`` model of the night will use it, is an
    http(s) URL: a mistyped one is a configuration error now, not every run an outage."""
    base = os.environ.get("EVALRUNNER_API_BASE", "").strip()
    if not base or not any(m.startswith("openai/") for m in models):
        return
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"EVALRUNNER_API_BASE {base!r} is not an http(s) URL; give the server's base URL, "
            "e.g. http://127.0.0.1:8080/v1"
        )


def requested_models(
    cli: tuple[str, ...] | list[str] = (), suite: list[str] | None = None
) -> list[str]:
    """CLI models win, then the suite's, then ``EVALRUNNER_MODEL`` (comma-separated), then ``local``."""
    if cli:
        return list(dict.fromkeys(cli))
    if suite:
        return list(dict.fromkeys(suite))
    env = [m.strip() for m in os.environ.get("EVALRUNNER_MODEL", "").split(",") if m.strip()]
    return env or [LOCAL]


ServeLocal = Callable[[Notify], Endpoint]
"""Serves the embedded model somewhere other than this process (a Ray cluster's nodes)."""


def loopback_without_proxy() -> None:
    """An http_proxy in the environment would swallow calls to a server on loopback."""
    os.environ.update(no_proxy(os.environ))


class EndpointPool:
    """Resolves model strings to endpoints; owns the embedded server if one is needed.

    ``notify`` hears what takes a while: starting the embedded model and when it is ready.
    ``serve_local``: where the embedded model is served when runs happen elsewhere (the
    executor's :attr:`~evalrunner.live.JobExecutor.serve_local`); default: this process.
    """

    def __init__(self, notify: Notify | None = None, serve_local: ServeLocal | None = None) -> None:
        self._server: LocalModelServer | None = None
        self._elsewhere: Endpoint | None = None
        self.serve_local = serve_local
        self.notify = notify or _no_notice

    def resolve(self, model: str) -> Endpoint:
        if model != LOCAL:
            # EVALRUNNER_API_BASE points openai/... models at any OpenAI-compatible server.
            api_base = (
                os.environ.get("EVALRUNNER_API_BASE") if model.startswith("openai/") else None
            )
            api_base = api_base or None
            return Endpoint(
                label=model, model=model, api_base=api_base, api_key=api_key_for(model, api_base)
            )
        if self.serve_local is not None:
            if self._elsewhere is None:
                self._elsewhere = self.serve_local(self.notify)
            return self._elsewhere
        if self._server is None:
            from evalrunner.endpoints._local_model import LocalModelServer

            loopback_without_proxy()
            self.notify("starting local model (the embedded SmolLM2-135M) ...")
            self._server = LocalModelServer().start()
            took = self._server.startup_seconds
            self.notify("local model ready" + (f" after {took:.1f} s" if took else ""))
        return Endpoint(
            label=LOCAL,
            model=self._server.model,
            api_base=self._server.api_base,
            api_key=self._server.api_key,
            max_concurrency=self._server.slots,
        )

    def local_server_died(self) -> str | None:
        """:meth:`LocalModelServer.death_notice` of the embedded server this pool started."""
        return self._server.death_notice() if self._server is not None else None

    def close(self) -> None:
        if self._server is not None:
            self._server.stop(keep_log=self._server.died() is not None)
            self._server = None

    def __enter__(self) -> EndpointPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
