"""A writer and a critic improve a short text in turns: a plain LangGraph `StateGraph`
that gains intrinsic memory from a few lines (marked `# + intrinsic memory`).

    python examples/writer_critic.py [--model embedded] [--rounds 3] [--budget 1024]

The writer drafts and revises, the critic reviews. With intrinsic memory each keeps its own
notes (requirements, what was fixed, what is open), updated from its own output after each
of its turns, and sees the task, its notes and only as many recent messages as the budget
allows, however long the exchange grows. `--model` takes what `ima run --model` takes
(the embedded default runs offline).
"""

from __future__ import annotations

from typing import Annotated, Any

import _example as example  # the examples' command line and printing
from intrinsic_memory import IntrinsicMemory, MemoryChannel, add_intrinsic_memory
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

TASK = (
    "Write a 60-word product notice for a city bike-sharing service: e-bikes arrive on "
    "1 June, cost EUR 0.25 per minute, and must be returned to a docking station."
)
WRITER = "You are the writer. Write or revise the notice; answer with the notice only."
CRITIC = "You are the critic. Name the two most important problems of the latest draft."


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    rounds: int
    intrinsic_memory: MemoryChannel  # + intrinsic memory: each agent's, merged by agent


def build(model: BaseChatModel, rounds: int = 3, token_budget: int = 1024) -> StateGraph:
    """The writer/critic graph; compile it with a checkpointer to resume it."""

    def writer(state: State) -> dict[str, Any]:
        reply = model.invoke([SystemMessage(WRITER), *state["messages"]])
        return {"messages": [AIMessage(reply.text, name="writer")]}

    def critic(state: State) -> dict[str, Any]:
        reply = model.invoke([SystemMessage(CRITIC), *state["messages"]])
        review = HumanMessage(reply.text, name="critic")  # the writer reads it as input
        return {"messages": [review], "rounds": state.get("rounds", 0) + 1}

    builder = StateGraph(State)
    memory = IntrinsicMemory(model, memory_tokens=192)  # + intrinsic memory
    # Each agent node is added with its memory step; edges leave from the step.
    after_writer = add_intrinsic_memory(  # +
        builder, "writer", writer, memory, token_budget=token_budget, role=WRITER
    )
    after_critic = add_intrinsic_memory(  # +
        builder, "critic", critic, memory, token_budget=token_budget, role=CRITIC
    )
    builder.add_edge(START, "writer")
    builder.add_edge(after_writer, "critic")
    builder.add_conditional_edges(
        after_critic, lambda s: END if s["rounds"] >= rounds else "writer", ["writer", END]
    )
    return builder


def main() -> None:
    parser = example.parser(__doc__, "tokens each agent sees")
    parser.add_argument("--rounds", type=int, default=3, help="writer/critic rounds")
    args = parser.parse_args()
    graph = build(example.chat_model(args.model), args.rounds, args.budget).compile()
    result = graph.invoke({"messages": [HumanMessage(TASK)], "rounds": 0})
    final = next(m for m in reversed(result["messages"]) if isinstance(m, AIMessage))
    print(f"Final notice:\n{final.text}\n")
    example.print_memories(result)


if __name__ == "__main__":
    main()
