"""add_intrinsic_memory with a memory chosen from the graph state (a template written during
the run) and each update's token usage summed in the state, on a plain StateGraph."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from ima import IntrinsicMemory, MemoryTemplate, add_intrinsic_memory
from ima.models.scripted import ScriptedChatModel


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    template: str
    turns: int


def test_the_memory_can_come_from_the_state_and_its_usage_is_summed():
    model = ScriptedChatModel()
    chosen: list[str] = []

    def memory(state: dict[str, Any]) -> IntrinsicMemory:
        chosen.append(state["template"])
        return IntrinsicMemory(model, MemoryTemplate.from_markdown(state["template"], "llm"))

    def setup(state: State) -> dict[str, Any]:
        return {"template": "## My contributions so far\n- <what I said>\n## Open questions\n- <q>"}

    def writer(state: State) -> dict[str, Any]:
        turn = state.get("turns", 0) + 1
        return {"messages": [AIMessage(f"Draft {turn}: e-bikes from 1 June.")], "turns": turn}

    builder = StateGraph(State)
    builder.add_node("setup", setup)
    builder.add_node("writer", writer)
    builder.add_edge(START, "setup")
    builder.add_edge("setup", "writer")
    builder.add_conditional_edges("writer", lambda s: END if s["turns"] >= 3 else "writer")
    add_intrinsic_memory(builder, "writer", memory, budget=512, usage_key="usage")
    result = builder.compile().invoke({"messages": [HumanMessage("Write a notice.")]})

    assert len(chosen) == 3 and set(chosen) == {result["template"]}
    record = result["intrinsic_memory"]["writer"]
    assert record["version"] == 3 and record["text"].startswith("## My contributions so far")
    usage = result["usage"]["writer"]["memory_update"]
    assert usage["calls"] == 3 and usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert set(result["usage"]) == {"writer"}
