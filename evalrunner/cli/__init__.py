"""The ``evalrunner`` command: a thin click layer over the Python API.

Not an API itself: each command builds its options and calls the packages
below (``evalrunner.night.run_live``, ``evalrunner.report.write_report``, ...),
which is what scripts should call too. One module per command.
"""

from evalrunner.cli._main import main

__all__ = ["main"]
