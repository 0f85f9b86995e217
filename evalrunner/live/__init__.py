"""Live mode's executor: run a suite's scheduled runs against model endpoints, one file per run.

:func:`~evalrunner.live._driver.run_night` runs a night it is given (a claimed
results directory and its schedule, ``_schedule``, opened by
:func:`evalrunner.night._open.open_night`): batch by batch, in this process or on
Ray (``_ray``), each job executed (``_execute``), ``command:`` agents under the
capture proxy (``_command``), each run classified (:func:`classify`) into its
record (``_run_record``) and written to the results directory
(:class:`ResultsDir`) as it finishes, the progress shown (``_progress``). The whole night
(compare, history) is :func:`evalrunner.night.run_live`.
"""

from evalrunner.live._classify import Classification, classify
from evalrunner.live._results import ResultsDir, load_records

__all__ = ["Classification", "ResultsDir", "classify", "load_records"]
