"""Model endpoints: which model a run talks to, and the embedded local model's server.

A model string (any litellm model, or ``local``) is checked before any run and
resolved to an :class:`Endpoint`; an :class:`EndpointPool` starts the embedded
model (:class:`LocalModelServer`) on first use and stops it when it closes.
"""

from evalrunner.endpoints._endpoints import LOCAL, Endpoint, EndpointPool
from evalrunner.endpoints._local_model import LocalModelServer

__all__ = ["LOCAL", "Endpoint", "EndpointPool", "LocalModelServer"]
