"""Server-sent events, as the provider SDKs parse them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple


class Event(NamedTuple):
    """One SSE event: an optional ``event:`` name and a JSON ``data:`` payload."""

    name: str | None
    data: Any


def encode(events: Iterable[Event], done: bool = False) -> bytes:
    """The events as one SSE body; ``done`` appends OpenAI chat's ``data: [DONE]``."""
    parts = []
    for event in events:
        head = f"event: {event.name}\n" if event.name else ""
        parts.append(f"{head}data: {json.dumps(event.data, ensure_ascii=False)}\n\n")
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()
