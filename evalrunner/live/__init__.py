"""Live mode's executor: run a suite's planned runs against model endpoints, one file per run.

:func:`~evalrunner.live._runner.open_night` claims a results directory and
settles the run schedule (``_schedule``); :func:`~evalrunner.live._runner.run_night`
executes it in this process or on Ray (``_ray``), ``command:`` agents under the
capture proxy (``_command``), each run classified (:func:`classify`) and written
to the results directory (:class:`ResultsDir`) as it finishes. The whole night
(compare, history) is :func:`evalrunner.night.run_live`.
"""

from evalrunner.live._classify import Classification, classify
from evalrunner.live._results import ResultsDir, load_records

__all__ = ["Classification", "ResultsDir", "classify", "load_records"]
