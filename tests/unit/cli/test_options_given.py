"""The locations a command was given, repeated in the commands it suggests."""

from __future__ import annotations

from evalrunner.cli._options import with_locations


def test_a_suggested_command_gets_the_locations_and_a_windows_path_stays_as_given() -> None:
    # A backslash in the path was read as a regex escape: "bad escape \w" (a review).
    said = (
        "refresh it with evalrunner baseline --suite caps --from n2; not baseline --suite capsule"
    )
    where = " --baselines 'C:\\work\\bl'"
    assert with_locations(said, "caps", where) == (
        "refresh it with evalrunner baseline --suite caps --baselines 'C:\\work\\bl' --from n2; "
        "not baseline --suite capsule"
    )
    run = "finish it with evalrunner run --suite caps --out n2 --resume"
    assert with_locations(run, "caps", " --suites-dir s", "run") == (
        "finish it with evalrunner run --suite caps --suites-dir s --out n2 --resume"
    )
    assert with_locations(said, "caps", "") == said
