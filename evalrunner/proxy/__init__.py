"""An OpenAI- and Anthropic-compatible capture proxy: any agent, any SDK, any language.

Agents reach models through a base URL; point it at the proxy and every model
call is forwarded upstream through litellm (or answered from a recording),
and the run becomes an ATIF trajectory. See docs/proxy.md.
"""

from evalrunner.core._fingerprint import DEFAULT_FINGERPRINT, FingerprintConfig
from evalrunner.proxy._recording import RecordedCall, RecordedError, Recording
from evalrunner.proxy._request import ModelRequest
from evalrunner.proxy._runs import DEFAULT_RUN, Mode, ProxyRunResult
from evalrunner.proxy._server import DUMMY_KEY, ProxyServer
from evalrunner.proxy._upstream import Upstream

__all__ = [
    "DEFAULT_FINGERPRINT",
    "DEFAULT_RUN",
    "DUMMY_KEY",
    "FingerprintConfig",
    "Mode",
    "ModelRequest",
    "ProxyRunResult",
    "ProxyServer",
    "RecordedCall",
    "RecordedError",
    "Recording",
    "Upstream",
]
