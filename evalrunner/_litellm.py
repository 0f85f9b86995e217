"""The one place that prepares litellm's process-wide settings.

litellm fetches its model cost map over the network when it is imported unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set: a network call nobody asked for, and a
~10 s stall offline. It must be set before anything imports litellm, agent
modules included, so the CLI, the pytest plugin and capture call
:func:`prepare` before importing them.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from evalrunner._heap import collector_paused


def prepare() -> None:
    """Environment defaults for litellm (a value the user set is kept)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def import_litellm() -> Any:
    """``litellm``, imported after :func:`prepare`, with its debug banner off (typed Any, as
    mypy is told to treat litellm: its response types are unions nobody narrows)."""
    prepare()
    if "litellm" not in sys.modules:  # the first import: seconds of CPU
        with collector_paused():
            importlib.import_module("litellm")
    litellm: Any = sys.modules["litellm"]
    litellm.suppress_debug_info = True
    return litellm
