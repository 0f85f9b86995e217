"""Frozen mode: record model responses once, replay them strictly, compare with a golden.

The pytest plugin (:mod:`evalrunner.frozen.plugin`, registered as a ``pytest11``
entry point) is the usual front end; :func:`run_frozen` is the same check as a
function. :class:`Replayer` and :class:`Recorder` plug into
``evalrunner.core.capture(replay=..., recorder=...)``.
"""

from evalrunner.frozen._golden import (
    GOLDEN_DIR,
    Golden,
    golden_path_for,
    golden_path_for_test,
    script_path_for,
)
from evalrunner.frozen._network import block_network
from evalrunner.frozen._replay import Recorder, RecordingTransport, Replayer, ReplayTransport
from evalrunner.frozen._run import FrozenOutcome, Mode, run_frozen
from evalrunner.frozen._script import Script, fingerprint_request, responses_from

__all__ = [
    "GOLDEN_DIR",
    "FrozenOutcome",
    "Golden",
    "Mode",
    "Recorder",
    "RecordingTransport",
    "ReplayTransport",
    "Replayer",
    "Script",
    "block_network",
    "fingerprint_request",
    "golden_path_for",
    "golden_path_for_test",
    "responses_from",
    "run_frozen",
    "script_path_for",
]
