"""The night's progress as runs finish: done/total, outcomes and an ETA."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TextIO

from evalrunner.suite._record import OUTCOME_TRAITS, Outcome, RunRecord

__all__ = ["Progress"]


class Progress:
    """Runs done/total, outcomes and an ETA: one live line on a TTY, plain lines otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self.rate_wait_s = 0.0

    def _eta(self) -> str:
        if not self.done:
            return "?"
        remaining = (time.monotonic() - self.started) / self.done * (self.total - self.done)
        return f"{remaining:.0f}s"

    def note(self, text: str) -> None:
        """A line about the night (not a run), once."""
        self.stream.write(("\n" if self.tty else "") + f"note: {text}\n")
        self.stream.flush()

    def update(self, record: RunRecord, rate_wait_s: float = 0.0) -> None:
        self.done += 1
        self.counts[record.outcome] += 1
        self.rate_wait_s += rate_wait_s
        # Time runs spent waiting for a shared rate limit: the night is provider-bound, not slow.
        waited = f" rate-limit wait {self.rate_wait_s:.0f}s" if self.rate_wait_s else ""
        counts = " ".join(f"{OUTCOME_TRAITS[o].label} {self.counts[o]}" for o in Outcome)
        status = f"[{self.done}/{self.total}] {counts}{waited} eta {self._eta()}"
        if self.tty:
            self.stream.write("\r" + status + " " * 4)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            reason = f" ({_clipped(record.reason)})" if record.reason else ""
            self.stream.write(f"{status} | {record.run_id}: {record.outcome}{reason}\n")
        self.stream.flush()


def _clipped(reason: str, width: int = 240) -> str:
    """``reason`` in about ``width`` characters, cut in the middle: its head says what failed
    and its tail (a refused call's hint) what to check."""
    if len(reason) <= width:
        return reason
    # The tail from its last parenthesis (the hint), if that is not over half the width.
    cut = reason.rfind(" (", len(reason) - width // 2)
    tail = reason[cut + 1 :] if cut > 0 else reason[-(width // 3) :]
    return f"{reason[: width - len(tail) - 3]} … {tail}"
