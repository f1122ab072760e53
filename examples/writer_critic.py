"""A writer and a critic improve a short text in turns: a plain LangGraph `StateGraph`
that gains intrinsic memory from three added lines (marked `# + intrinsic memory`).

    python examples/writer_critic.py [--model embedded] [--rounds 3] [--budget 1024]

The writer drafts and revises, the critic reviews. With intrinsic memory each keeps its own
notes (requirements, what was fixed, what is open), updated from its own output after each
of its turns, and sees the task, its notes and only as many recent messages as the budget
allows, however long the exchange grows. `--model` takes what `ima run --model` takes
(the embedded default runs offline).
"""

from __future__ import annotations

import argparse
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from ima import IntrinsicMemory, add_intrinsic_memory

TASK = (
    "Write a 60-word product notice for a city bike-sharing service: e-bikes arrive on "
    "1 June, cost EUR 0.25 per minute, and must be returned to a docking station."
)
WRITER = "You are the writer. Write or revise the notice; answer with the notice only."
CRITIC = "You are the critic. Name the two most important problems of the latest draft."


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    rounds: int


def build(model: BaseChatModel, rounds: int = 3, budget: int = 1024) -> StateGraph:
    """The writer/critic graph; compile it with a checkpointer to resume it."""

    def writer(state: State) -> dict[str, Any]:
        reply = model.invoke([SystemMessage(WRITER), *state["messages"]])
        return {"messages": [AIMessage(reply.text, name="writer")]}

    def critic(state: State) -> dict[str, Any]:
        reply = model.invoke([SystemMessage(CRITIC), *state["messages"]])
        review = HumanMessage(reply.text, name="critic")  # the writer reads it as input
        return {"messages": [review], "rounds": state.get("rounds", 0) + 1}

    builder = StateGraph(State)
    builder.add_node("writer", writer)
    builder.add_node("critic", critic)
    builder.add_edge(START, "writer")
    builder.add_edge("writer", "critic")
    builder.add_conditional_edges("critic", lambda s: END if s["rounds"] >= rounds else "writer")

    memory = IntrinsicMemory(model, tokens=192)  # + intrinsic memory
    add_intrinsic_memory(builder, "writer", memory, budget=budget, role=WRITER)  # +
    add_intrinsic_memory(builder, "critic", memory, budget=budget, role=CRITIC)  # +
    return builder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=1024)
    args = parser.parse_args()
    from ima.models import load_chat_model

    graph = build(load_chat_model(args.model), args.rounds, args.budget).compile()
    result = graph.invoke({"messages": [HumanMessage(TASK)], "rounds": 0})
    final = next(m for m in reversed(result["messages"]) if isinstance(m, AIMessage))
    print(f"Final notice:\n{final.text}\n")
    for agent, record in result["intrinsic_memory"].items():
        print(f"{agent}'s memory (version {record['version']}):\n{record['text']}\n")


if __name__ == "__main__":
    main()
