"""An agent on a framework nobody here wrote: pydantic-ai, on its OpenAI chat model.

Written the way its docs show; it knows nothing of evalrunner. The provider's
client reads OPENAI_BASE_URL / OPENAI_API_KEY when the agent is built, so it
is built per run. As a script (``python framework_agents.py TASK``) it is a
command agent and prints ``{"final_answer": ...}``.
"""

from __future__ import annotations

import json
import os
import sys

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima"}
INSTRUCTIONS = "You answer questions about capitals. Use the lookup tool."


def build(instructions: str = INSTRUCTIONS) -> Agent[None, str]:
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider())
    agent: Agent[None, str] = Agent(model, instructions=instructions)

    @agent.tool_plain
    def lookup(country: str) -> str:
        """The capital of a country."""
        return CAPITALS.get(country, "unknown")

    return agent


def pydantic_ai_agent(task: str) -> str:
    instructions = os.environ.get("DEMO_INSTRUCTIONS", INSTRUCTIONS)
    return build(instructions).run_sync(task).output


if __name__ == "__main__":
    print(json.dumps({"final_answer": pydantic_ai_agent(sys.argv[1])}))
