"""Warnings the core raises about a run, importable from anywhere in the package."""

from __future__ import annotations

from evalrunner._next import NextStep


class NoModelCallsWarning(UserWarning):
    """A capture scope closed without seeing a single model call.

    Almost always the agent called its model through something capture does not
    wrap, so the trajectory (and any golden or live record made from it) is empty.
    Silence it for an agent that makes no model call on purpose with
    ``capture(..., expect_model_calls=False)`` (also on ``run_captured`` /
    ``arun_captured``) or a warnings filter on this class.
    """


PROXY = NextStep("proxy")
"""The capture proxy's command, for agents that reach their model some other way."""


def no_model_calls_message(name: str) -> str:
    return (
        f"capture({name!r}) saw no model call. If the agent called a model, the call "
        "bypassed capture, which sees only litellm.completion/acompletion called through "
        "the module: an SDK client (openai, anthropic, ...), `from litellm import completion` "
        "taken before capture was installed, or a response cache (dspy, langchain) answered "
        f"it. Point the agent at the capture proxy instead (`{PROXY}`, docs/proxy.md). "
        "If the agent makes no model call on purpose, pass expect_model_calls=False."
    )


def missed_calls_message(captured: int, missed: int) -> str:
    """How a run that made model calls past capture is named (a recording that lost them
    is not written; a live run of them is an infra_error: its shape lacks those calls)."""
    return (
        f"capture saw {captured} of the agent's {captured + missed} model calls; {missed} "
        "went to the endpoint past it, through litellm's completion bound before capture "
        "(`from litellm import completion` at import). Call it through the module "
        "(litellm.completion(...)), or run the agent through the capture proxy "
        f"(`{PROXY}`, docs/proxy.md)"
    )
