"""The run history: one typed entry per night (JSON or Parquet), and the evidence it carries.

Written once per night by :func:`append`; read by the report
(:func:`load_history`) and by the next night and ``plan``, which take each
cell's evidence since its anchor from the newest entries
(:func:`evidence_so_far`).
"""

from evalrunner.history._entry import HistoryEntry
from evalrunner.history._store import History, append, evidence_so_far, load_history

__all__ = ["History", "HistoryEntry", "append", "evidence_so_far", "load_history"]
