"""One night end to end: check everything, run, compare with the baselines, append to the history.

``evalrunner run`` is a thin layer over :func:`run_live`; ``evalrunner plan``
over :func:`plan_suite`.
"""

from evalrunner.night._night import LiveResult, NightOptions, Outage, run_live
from evalrunner.night._plan import plan_suite
from evalrunner.night._sentinel import SentinelResult, run_sentinel

__all__ = [
    "LiveResult",
    "NightOptions",
    "Outage",
    "SentinelResult",
    "plan_suite",
    "run_live",
    "run_sentinel",
]
