"""Frozen mode: record model responses once, replay them strictly, compare with a golden.

The pytest plugin (:mod:`evalrunner.frozen.plugin`, registered as a ``pytest11``
entry point) is the usual front end; :func:`run_frozen` is the same check as a
function. :class:`Replayer` and :class:`Recorder` plug into
``evalrunner.core.capture(replay=..., recorder=...)``.
"""

from evalrunner.frozen._golden import Golden, golden_path_for, script_path_for
from evalrunner.frozen._network import block_network
from evalrunner.frozen._replay import Recorder, Replayer
from evalrunner.frozen._run import FrozenOutcome, run_frozen
from evalrunner.frozen._script import Script, responses_from

__all__ = [
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
