"""What a process pays for the million objects litellm builds, when evalrunner imports it.

litellm is imported with the cyclic collector paused, what it built is frozen so the
collector does not walk it again (0.5 s of CPU in a PR check's first golden test), and
the process leaves what it holds at exit to the operating system instead of walking it
once more: 1.3 s of CPU (evalrunner/_heap.py). Agents' modules are imported paused too
(tests/unit/suite/test_agent_import.py), and a night keeps what the process held before
it out of the collector's way (test_runner_pools.py). pytest's own last collection,
which reports exceptions raised in finalizers, still sees everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PROBE = textwrap.dedent(
    """
    import atexit, gc, json, sys

    seen = {}

    class Watch:
        def find_spec(self, name, path=None, target=None):
            if name == "litellm":
                seen["collector_on_during_import"] = gc.isenabled()
            return None

    sys.meta_path.insert(0, Watch())
    # Registered before evalrunner's own exit handler, so it runs after it (last in, first out).
    atexit.register(lambda: print(json.dumps({**seen, "frozen_at_exit": gc.get_freeze_count() > 0})))
    from evalrunner._litellm import import_litellm

    import_litellm()
    seen["collector_on_after_import"] = gc.isenabled()
    seen["frozen_after_import"] = gc.get_freeze_count() > 100_000
    """
)


def test_litellm_is_imported_with_the_collector_paused_its_objects_frozen_and_left_to_the_os() -> (
    None
):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "collector_on_during_import": False,
        "collector_on_after_import": True,
        "frozen_after_import": True,
        "frozen_at_exit": True,
    }


FREEZES_PROBE = textwrap.dedent(
    """
    import gc, json
    from evalrunner._heap import collector_paused, heap_frozen
    from evalrunner._litellm import import_litellm

    seen = {}
    with collector_paused():
        import xml.dom.minidom  # a few thousand objects: not worth a freeze
    seen["after_a_small_import"] = gc.get_freeze_count()
    import_litellm()
    big = gc.get_freeze_count()
    with heap_frozen():  # a night
        seen["night_keeps_it_frozen"] = gc.get_freeze_count() >= big
    seen["after_the_night"] = gc.get_freeze_count()
    print(json.dumps(seen))
    """
)


def test_only_a_big_import_is_frozen_and_a_night_gives_it_back_to_the_collector() -> None:
    # Given back at the night's end, with what the night held: what died meanwhile is
    # collected as before (a cycle alive at the import and dropped since included).
    proc = subprocess.run(
        [sys.executable, "-c", FREEZES_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "after_a_small_import": 0,
        "night_keeps_it_frozen": True,
        "after_the_night": 0,
    }


CLI_PROBE = textwrap.dedent(
    """
    import atexit, gc, json
    atexit.register(lambda: print(json.dumps({"frozen_at_exit": gc.get_freeze_count() > 0})))
    from evalrunner.cli._main import main
    try:
        main(["list"], standalone_mode=False)
    except SystemExit as exc:
        assert not exc.code, exc.code
    """
)


def test_an_evalrunner_command_leaves_what_its_process_holds_to_the_os_at_exit(
    tmp_path: Path,
) -> None:
    (tmp_path / "suites").mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", CLI_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"frozen_at_exit": True}


def test_pytest_still_reports_an_exception_raised_in_a_finalizer(
    pytester: pytest.Pytester,
) -> None:
    # A session that imported litellm through evalrunner: its last collection is pytest's.
    pytester.makepyfile(
        """
        from evalrunner._litellm import import_litellm


        class Cycle:
            def __init__(self):
                self.me = self

            def __del__(self):
                raise RuntimeError("raised in a finalizer")


        ALIVE = [Cycle()]  # alive while litellm is imported


        def test_makes_garbage():
            import_litellm()
            ALIVE.clear()  # now garbage only the cyclic collector can find
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    result.stderr.fnmatch_lines(["*PytestUnraisableExceptionWarning*", "*raised in a finalizer*"])


def test_test_modules_are_imported_with_the_collector_paused_and_tests_run_with_it_on(
    pytester: pytest.Pytester,
) -> None:
    # A golden test's module imports its litellm agent at the top, while pytest collects:
    # with the collector running, that import cost ~1.1 s more CPU (benchmarks/bench_pr.py).
    pytester.makepyfile(
        """
        import gc

        AT_IMPORT = gc.isenabled()


        def test_collector():
            assert (AT_IMPORT, gc.isenabled()) == (False, True)
        """
    )
    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1)
