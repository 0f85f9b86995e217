"""The locations a command was given, repeated in the commands it suggests."""

from __future__ import annotations

import pickle

from evalrunner._next import NextStep, Placeholder, Said, each, render


def test_a_suggested_command_gets_the_locations_and_a_windows_path_stays_as_given() -> None:
    # A backslash in the path was read as a regex escape: "bad escape \w" (a review).
    said = Said(
        "refresh it with ",
        NextStep("baseline", "caps", ("--from", "n2")),
        "; not baseline --suite capsule",
    )
    where = {"baselines_dir": ("--baselines", "C:\\work\\bl")}
    assert render(said, where) == (
        "refresh it with evalrunner baseline --suite caps --baselines 'C:\\work\\bl' --from n2; "
        "not baseline --suite capsule"
    )
    run = Said(
        "finish it with ",
        NextStep("run", "caps", ("--out", "n2", "--resume"), locations=("suites_dir",)),
    )
    both = {"suites_dir": ("--suites-dir", "s"), **where}
    assert render(run, both) == (
        "finish it with evalrunner run --suite caps --suites-dir s --out n2 --resume"
    )
    assert render(said, {}) == said
    assert (
        render(said)
        == str(said)
        == (
            "refresh it with evalrunner baseline --suite caps --from n2; not baseline --suite capsule"
        )
    )


def test_names_with_dots_and_spaces_are_one_shell_word_each() -> None:
    step = NextStep("baseline", "caps.v2", ("--scenario", "a b", "--model", "openai/gpt-4.1"))
    where = {"suites_dir": ("--suites-dir", "team suites")}
    assert step.render(where) == (
        "evalrunner baseline --suite caps.v2 --suites-dir 'team suites' --scenario 'a b' "
        "--model openai/gpt-4.1"
    )


def test_an_error_holding_said_words_renders_them_and_keeps_them_through_pickle() -> None:
    said = Said("x: ", NextStep("run", "s", ("--resume",)), ".")
    error = pickle.loads(pickle.dumps(ValueError(Said("why; ", said))))
    assert str(error) == "why; x: evalrunner run --suite s --resume."
    assert render(error, {"baselines_dir": ("--baselines", "b")}) == (
        "why; x: evalrunner run --suite s --baselines b --resume."
    )
    assert render(ValueError("plain")) == "plain"


def test_a_placeholder_the_user_fills_in_is_shown_as_it_is_and_the_rest_quoted() -> None:
    step = NextStep(
        "baseline",
        "s",
        ("--from", Placeholder("<a night's results directory>"), "--from", "my night"),
    )
    assert render(step, {"baselines_dir": ["--baselines", "b"]}) == (
        "evalrunner baseline --suite s --baselines b --from <a night's results directory> "
        "--from 'my night'"
    )
    assert each("--model", ["a", "b c"]) == ("--model", "a", "--model", "b c")
