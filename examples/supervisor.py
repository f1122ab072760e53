"""A supervisor made with `create_agent` delegates to two subagents called as tools; each
subagent keeps its own intrinsic memory between calls (lines marked `# + intrinsic memory`).

    python examples/supervisor.py [--model embedded] [--budget 1024]

The user asks for a trip plan in three messages on one thread. The supervisor hands parts
to a route planner and a budget keeper. Each subagent starts every call with a fresh
conversation (only the supervisor's request), yet remembers what it decided before: its
memory lives in the supervisor's state under `intrinsic_memory`, is updated from the
subagent's own answer after each call, and is checkpointed with the thread. `--model`
takes what `ima run --model` takes (the embedded default runs offline).
"""

from __future__ import annotations

import _example as example  # the examples' command line and printing
from intrinsic_memory import (
    IntrinsicMemory,
    IntrinsicMemoryMiddleware,
    IntrinsicMemoryState,
    subagent_tool,
)
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver

PLANNER = "You plan train routes between European cities: stops, trains and travel times."
BUDGET = "You keep the trip's budget: costs per item, running total, what is left."
SUPERVISOR = (
    "You coordinate a trip plan. Ask `planner` about routes and `budget` about costs, "
    "then answer the user in three sentences."
)
REQUESTS = [
    "Plan a 4-day rail trip from Vienna to Amsterdam for two people with EUR 900 in total.",
    "Add a night in Cologne on the way.",
    "Summarise the final route and what the budget has left.",
]


def build(model: BaseChatModel, token_budget: int = 1024):
    """The supervisor and its two subagents, with a checkpointer so the thread persists."""
    memory = IntrinsicMemory(model, memory_tokens=192)  # + intrinsic memory

    def subagent(name: str, role: str):
        remember = IntrinsicMemoryMiddleware(  # + intrinsic memory
            memory, agent=name, token_budget=token_budget, role=role
        )
        return create_agent(model, system_prompt=role, middleware=[remember], name=name)

    tools = [
        subagent_tool(subagent("planner", PLANNER), name="planner", description=PLANNER),
        subagent_tool(subagent("budget", BUDGET), name="budget", description=BUDGET),
    ]
    return create_agent(
        model,
        tools=tools,
        system_prompt=SUPERVISOR,
        state_schema=IntrinsicMemoryState,  # + intrinsic memory: the subagents' memories
        checkpointer=InMemorySaver(),
    )


def main() -> None:
    example.run_requests(
        __doc__, "tokens each subagent sees", build, REQUESTS, "trip", recursion_limit=12
    )


if __name__ == "__main__":
    main()
