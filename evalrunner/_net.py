"""Which addresses are this machine's own: one rule for the network guard and the proxy.

Connecting and listening read the any-address differently, so the caller says
which it asks about: a connection to ``0.0.0.0`` or ``::`` reaches this
machine's loopback, while a listener bound to it accepts every interface.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
_ANY = frozenset({"", "0.0.0.0", "::"})


def is_loopback(host: str, *, listening: bool = False) -> bool:
    """Whether ``host`` (a name or address, IPv6 with or without brackets or a zone) is loopback.

    ``listening``: the host is a listener's bind address, so the any-address is
    not loopback (it listens on every interface); for a connection it is.
    IPv4-mapped IPv6 addresses (``::ffff:127.0.0.1``) count as their IPv4 address.
    """
    host = host.strip("[]").lower()
    if host in _NAMES:
        return True
    if host in _ANY:
        return not listening
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


_NO_PROXY = ("NO_PROXY", "no_proxy")
"""Both spellings: curl and requests read the lowercase one first, others the uppercase."""


def no_proxy(
    env: Mapping[str, str], hosts: Sequence[str] = ("127.0.0.1", "localhost")
) -> dict[str, str]:
    """The ``NO_PROXY`` and ``no_proxy`` entries of ``env`` with ``hosts`` added, so that an
    ``HTTP(S)_PROXY`` of the machine does not carry calls to a server on loopback.

    Each is a comma-separated list, read as one: a host already listed is not added again
    (``10.127.0.1`` does not list ``127.0.0.1``). Returns the two entries, for the caller
    to merge into the environment it starts or changes.
    """
    entries = {}
    for key in _NO_PROXY:
        listed = [h.strip() for h in env.get(key, "").split(",") if h.strip()]
        known = {h.lower() for h in listed}
        entries[key] = ",".join([*listed, *(h for h in hosts if h.lower() not in known)])
    return entries


TELEMETRY_OFF: Mapping[str, str] = {
    # The OpenAI Agents SDK exports traces to api.openai.com after a run.
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    # Haystack and CrewAI send usage events from a thread of their own (via posthog and
    # OpenTelemetry), seconds after the run that imported them.
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "CREWAI_DISABLE_TELEMETRY": "true",
    # chromadb (and libraries on it, such as mem0), Hugging Face Hub, and the convention
    # many command-line tools honour.
    "ANONYMIZED_TELEMETRY": "False",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
}
"""Known frameworks' usage telemetry, switched off for agents evalrunner runs: a report
home from a library's own thread measures nothing, and under replay a later test's network
guard blocks it. Each is read when its library is imported."""
