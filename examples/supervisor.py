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

import argparse

from intrinsic_memory import (
    IntrinsicMemory,
    IntrinsicMemoryMiddleware,
    IntrinsicMemoryState,
    subagent_tool,
)
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError

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
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model",
        default="embedded",
        help="what `ima run --model` takes: embedded (offline, the default), scripted "
        "(deterministic test model), ollama:NAME, or a LangChain provider:model",
    )
    parser.add_argument("--budget", type=int, default=1024, help="tokens each subagent sees")
    parser.add_argument(
        "--requests", type=int, default=len(REQUESTS), help="how many of the requests to send"
    )
    args = parser.parse_args()
    from ima.models import load_chat_model  # the app's models: embedded, scripted, Ollama

    supervisor = build(load_chat_model(args.model), args.budget)
    config = {"configurable": {"thread_id": "trip"}, "recursion_limit": 12}
    for request in REQUESTS[: args.requests]:
        try:
            result = supervisor.invoke({"messages": [HumanMessage(request)]}, config)
        except GraphRecursionError:  # a small model can keep calling tools
            print(f"> {request}\n(no answer within {config['recursion_limit']} steps)\n")
            continue
        print(f"> {request}\n{result['messages'][-1].text}\n")
    result = supervisor.get_state(config).values
    for agent, record in (result.get("intrinsic_memory") or {}).items():
        print(f"{agent}'s memory (version {record['version']}):\n{record['text']}\n")


if __name__ == "__main__":
    main()
