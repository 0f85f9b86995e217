"""Frozen mode: record model responses once, replay them strictly, compare with a golden.

The pytest plugin (:mod:`evalrunner.frozen.plugin`, registered as a ``pytest11``
entry point) is the usual front end; :func:`run_frozen` is the same check as a
function. :class:`Replayer` and :class:`Recorder` plug into
``evalrunner.core.capture(replay=..., recorder=...)``.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from evalrunner._lazy import lazy_exports as _lazy_exports

GOLDEN_DIR = "__goldens__"
"""The folder beside a test module that holds its tests' goldens (here, not in ``_golden``:
the plugin looks for it in every session, which must not import pydantic for it)."""

SUITE_GOLDENS = "goldens"
"""The folder beside a suite file that holds its scenarios' goldens: ``goldens/<suite>/``."""

if _TYPE_CHECKING:
    from evalrunner.frozen._golden import Golden, golden_path_for, script_path_for
    from evalrunner.frozen._network import block_network
    from evalrunner.frozen._replay import Recorder, Replayer
    from evalrunner.frozen._run import FrozenOutcome, run_frozen
    from evalrunner.frozen._script import Script, responses_from

__all__ = [
    "GOLDEN_DIR",
    "SUITE_GOLDENS",
    "FrozenOutcome",
    "Golden",
    "Recorder",
    "Replayer",
    "Script",
    "block_network",
    "golden_path_for",
    "responses_from",
    "run_frozen",
    "script_path_for",
]

__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    {
        "FrozenOutcome": "evalrunner.frozen._run",
        "Golden": "evalrunner.frozen._golden",
        "Recorder": "evalrunner.frozen._replay",
        "Replayer": "evalrunner.frozen._replay",
        "Script": "evalrunner.frozen._script",
        "block_network": "evalrunner.frozen._network",
        "golden_path_for": "evalrunner.frozen._golden",
        "responses_from": "evalrunner.frozen._script",
        "run_frozen": "evalrunner.frozen._run",
        "script_path_for": "evalrunner.frozen._golden",
    },
)
