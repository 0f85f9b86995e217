"""An OpenAI- and Anthropic-compatible capture proxy: any agent, any SDK, any language.

Agents reach models through a base URL; point it at the proxy and every model
call is forwarded upstream through litellm (or answered from a recording),
and the run becomes an ATIF trajectory. See docs/proxy.md.
"""

from evalrunner.core._request_key import FingerprintConfig
from evalrunner.proxy._recording import Recording
from evalrunner.proxy._request import ModelRequest
from evalrunner.proxy._runs import ProxyRunResult
from evalrunner.proxy._server import DUMMY_KEY, ProxyServer
from evalrunner.proxy._upstream import Upstream

__all__ = [
    "DUMMY_KEY",
    "FingerprintConfig",
    "ModelRequest",
    "ProxyRunResult",
    "ProxyServer",
    "Recording",
    "Upstream",
]
