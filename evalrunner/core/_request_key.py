"""What a replayed request must match: a normalised view of it, and its hash, the request key
(written as ``fingerprint`` in recordings; a scenario's fingerprint is another thing).

One view for both replay paths: the in-process one (``frozen``, litellm's
keyword arguments) and the capture proxy's (a ``ModelRequest`` in chat form,
plus the API the agent spoke). The view keeps what decides the model's answer (by default the API spoken,
messages, tools, ``tool_choice`` and ``response_format``) and drops what
varies between two identical runs: provider ids (tool-call ids become
``call_1``, ``call_2``... in order of appearance), ``user``, ``metadata``,
``stream`` and ``stream_options``, the model name the agent sent, and sampling
parameters (temperature, top_p, seed, max_tokens, stop: they change the
distribution a response is drawn from, not the request; replay serves the
recorded draw). Tool arguments compare as parsed JSON, so spacing does not
count. Prompt-caching hints (``cache_control`` on a tool or a content part) do not
count either: they change what a call costs, not its answer, and recordings made before
the proxy carried them lack them. Both are configurable per suite with
:meth:`FingerprintConfig.extended`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalrunner._jsonio import canonical
from evalrunner._redact import redact
from evalrunner.core._normalize import ADDRESS_MASK

DEFAULT_FIELDS = frozenset({"api", "messages", "tools", "tool_choice", "response_format"})


@dataclass(frozen=True)
class FingerprintConfig:
    """Which request fields must match on replay, and which text to mask before comparing."""

    fields: frozenset[str] = DEFAULT_FIELDS
    masks: tuple[tuple[re.Pattern[str], str], ...] = ((ADDRESS_MASK[0], ADDRESS_MASK[1]),)

    def extended(
        self,
        include: Iterable[str] = (),
        ignore: Iterable[str] = (),
        masks: Iterable[tuple[str, str]] = (),
    ) -> FingerprintConfig:
        """``include`` adds fields (e.g. ``temperature``, ``seed``, ``max_tokens``); ``ignore``
        drops some (e.g. ``tools``); ``masks`` are (regex, replacement) pairs for volatile text."""
        return FingerprintConfig(
            fields=(self.fields | frozenset(include)) - frozenset(ignore),
            masks=self.masks + tuple((re.compile(p), r) for p, r in masks),
        )


DEFAULT_FINGERPRINT = FingerprintConfig()


def normal_content(content: Any) -> Any:
    """Message content as text when it is only text (a string or text parts), else as sent
    (without caching hints)."""
    if content is None:
        return ""
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" for p in content
    ):
        return "".join(str(p.get("text", "")) for p in content)
    if isinstance(content, list):
        return [_uncached(p) for p in content]
    return content


def _uncached(item: Any) -> Any:
    """A tool or content part without its ``cache_control`` (a caching hint)."""
    if isinstance(item, Mapping) and "cache_control" in item:
        return {k: v for k, v in item.items() if k != "cache_control"}
    return item


def _arguments(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except json.JSONDecodeError:
        return raw


def _message(m: Mapping[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    def ordinal(call_id: Any) -> str:
        return ids.setdefault(str(call_id), f"call_{len(ids) + 1}")

    view: dict[str, Any] = {"role": m.get("role"), "content": normal_content(m.get("content"))}
    calls = m.get("tool_calls") or []
    if calls:
        view["tool_calls"] = [
            {
                "id": ordinal(c.get("id")),
                "name": (c.get("function") or {}).get("name"),
                "arguments": _arguments((c.get("function") or {}).get("arguments")),
            }
            for c in calls
            if isinstance(c, Mapping)
        ]
    if m.get("tool_call_id") is not None:
        view["tool_call_id"] = ordinal(m["tool_call_id"])
    if m.get("name"):
        view["name"] = m["name"]
    return view


def _masked(value: Any, masks: tuple[tuple[re.Pattern[str], str], ...]) -> Any:
    if isinstance(value, str):
        for pattern, repl in masks:
            value = pattern.sub(repl, value)
        return value
    if isinstance(value, list):
        return [_masked(v, masks) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v, masks) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    """JSON-like data from what an agent passes litellm (SDK objects, pydantic models, tuples)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump())
    return value


def _fields(request: Mapping[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    """The request's fields replay matches on, as plain data (no tools: none offered; a
    tool's caching hint left out)."""
    flat = {k: _plain(v) for k, v in request.items() if k in fields}
    view = {k: v for k, v in flat.items() if v is not None and not (k == "tools" and v == [])}
    if isinstance(view.get("tools"), list):
        view["tools"] = [_uncached(t) for t in view["tools"]]
    return view


def matching_view(
    request: Mapping[str, Any], config: FingerprintConfig = DEFAULT_FINGERPRINT
) -> dict[str, Any]:
    """The part of a request replay matches on, normalised, masked and redacted.

    ``request``: chat keyword arguments (``messages``, ``tools``, ``tool_choice``,
    sampling parameters), with ``api`` where the capture proxy knows it.
    """
    view = _fields(request, config.fields)
    if "messages" in view:
        ids: dict[str, str] = {}
        view["messages"] = [
            _message(m if isinstance(m, Mapping) else {"content": str(m)}, ids)
            for m in view["messages"]
        ]
    # Redacted like the recording itself, or a prompt holding a secret could
    # never match its own (redacted) recording.
    masked: dict[str, Any] = redact(_masked(view, config.masks))
    return masked


def request_key(view: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(view).encode()).hexdigest()[:16]


def masked_request_key(
    view: Mapping[str, Any], masks: tuple[tuple[re.Pattern[str], str], ...]
) -> str:
    """The request key of ``view`` once ``masks`` have replaced volatile text in it (a
    golden's own masks: a temp path a tool answers with differs every run)."""
    return request_key(_masked(dict(view), masks))
