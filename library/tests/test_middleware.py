"""Intrinsic memory for `create_agent` agents (`IntrinsicMemoryMiddleware`) and subagents
called as tools by a supervisor (`subagent_tool`): the repository's supervisor example and
a tool-calling agent, driven by fake models."""

from __future__ import annotations

from typing import Any

import supervisor as supervisor_example
from conftest import Recorder
from intrinsic_memory import IntrinsicMemory, IntrinsicMemoryMiddleware, fit_context
from intrinsic_memory.tokens import count_message_tokens
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id}


def own_memory_message(call: list[BaseMessage]) -> str:
    return next(m.text for m in call if m.text.startswith("Your own notes"))


def test_subagents_called_in_parallel_both_keep_their_memory_across_requests():
    model = Recorder(supervisor=supervisor_example.SUPERVISOR)
    model.script = [
        AIMessage(
            "",
            tool_calls=[
                tool_call("planner", {"request": "route?"}, "1"),
                tool_call("budget", {"request": "cost?"}, "2"),
            ],
        ),
        AIMessage("Vienna to Amsterdam in 4 days within EUR 900."),
        AIMessage("", tool_calls=[tool_call("planner", {"request": "add Cologne"}, "3")]),
        AIMessage("Cologne added."),
    ]
    supervisor = supervisor_example.build(model, token_budget=600)
    config = {"configurable": {"thread_id": "trip"}}
    supervisor.invoke({"messages": [HumanMessage(supervisor_example.REQUESTS[0])]}, config)
    first = supervisor.get_state(config).values["intrinsic_memory"]
    assert set(first) == {"planner", "budget"}  # both parallel updates kept
    assert all(r["version"] == 1 for r in first.values())
    assert "You plan train routes" in first["planner"]["text"]
    assert "You keep the trip's" in first["budget"]["text"]

    supervisor.invoke({"messages": [HumanMessage(supervisor_example.REQUESTS[1])]}, config)
    second = supervisor.get_state(config).values["intrinsic_memory"]
    assert second["planner"]["version"] == 2 and second["budget"] == first["budget"]
    # the planner's second call started from a fresh conversation but saw its own memory
    planner_calls = [c for c in model.agent_calls() if c[0].text == supervisor_example.PLANNER]
    assert len(planner_calls) == 2
    assert own_memory_message(planner_calls[1]).endswith(first["planner"]["text"])
    assert "budget" not in own_memory_message(planner_calls[1]).lower()


def test_the_middleware_leaves_the_saved_transcript_unchanged():
    model = Recorder()
    middleware = IntrinsicMemoryMiddleware(
        IntrinsicMemory(model, memory_tokens=96), agent="solo", token_budget=300
    )
    agent = create_agent(
        model, system_prompt="You are solo.", middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "solo"}}
    for i in range(12):
        question = f"question {i} on topic{i}a, topic{i}b and topic{i}c " + "detail " * 30
        agent.invoke({"messages": [HumanMessage(question)]}, config)
    saved = agent.get_state(config).values["messages"]
    assert len(saved) == 24  # every question and answer is kept in the thread
    last_call = model.agent_calls()[-1]
    assert len(last_call) < len(saved)  # ...while the model saw a budgeted window
    assert last_call[-1].text.startswith("question 11")  # the newest question, always
    assert count_message_tokens(last_call[1:]) <= 300
    assert agent.get_state(config).values["intrinsic_memory"]["solo"]["version"] == 12


class Calculator(Recorder):
    """Calls `add` once per question, then answers with what the tool returned."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        if self.supervisor and messages[0].text == self.supervisor:
            self.calls.append(messages)
            answered = isinstance(messages[-1], ToolMessage)
            reply = (
                AIMessage(f"The sum is {messages[-1].text}.")
                if answered
                else AIMessage("", tool_calls=[tool_call("add", {"a": 2, "b": 3}, "c1")])
            )
            from langchain_core.outputs import ChatGeneration, ChatResult

            return ChatResult(generations=[ChatGeneration(message=reply)])
        return super()._generate(messages, *args, **kwargs)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_a_tool_calling_agent_always_sees_its_tool_call_and_result():
    """At the smallest budget allowed, the model still sees its own call and the tool's
    result, so it answers instead of calling the tool again and again."""
    model = Calculator(supervisor="You add numbers.")
    memory = IntrinsicMemory(model, memory_tokens=64)
    agent = create_agent(
        model,
        tools=[add],
        system_prompt="You add numbers.",
        middleware=[IntrinsicMemoryMiddleware(memory, agent="calc", token_budget=160)],
    )
    question = "What is 2 + 3? " + "Please show the working in detail. " * 40
    result = agent.invoke({"messages": [HumanMessage(question)]}, {"recursion_limit": 8})
    assert result["messages"][-1].text == "The sum is 5."
    answering = model.agent_calls()[-1]
    assert isinstance(answering[-1], ToolMessage) and answering[-2].tool_calls


def test_fit_context_keeps_a_tool_call_with_its_result():
    call = AIMessage("", tool_calls=[tool_call("planner", {"request": "x" * 200}, "7")])
    result = ToolMessage("y " * 50, tool_call_id="7")
    messages = [HumanMessage("the task"), call, result, AIMessage("done")]
    for budget in range(20, 400, 10):
        fitted = fit_context(messages, "", token_budget=budget)
        kept = fitted[2:]
        assert (call in kept) == (result in kept)
        assert not kept or not isinstance(kept[0], ToolMessage)
        assert fitted[-1] is messages[-1]  # the newest, always


def test_memory_updates_stay_out_of_the_message_stream_but_not_out_of_tracing():
    """What a chat UI shows (stream_mode="messages") is the agents' conversation; the
    memory updates' model calls are still seen by callbacks (tracing)."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Seen(BaseCallbackHandler):
        def __init__(self) -> None:
            self.tags: list[list[str]] = []

        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            self.tags.append(list(kwargs.get("tags") or []))

    model = Recorder()
    memory = IntrinsicMemory(model, memory_tokens=64)
    agent = create_agent(
        model,
        system_prompt="You are solo.",
        middleware=[IntrinsicMemoryMiddleware(memory, agent="solo", token_budget=300)],
    )
    seen = Seen()
    streamed = [
        chunk
        for chunk, _ in agent.stream(
            {"messages": [HumanMessage("hello")]},
            {"callbacks": [seen]},
            stream_mode="messages",
        )
    ]
    assert streamed and not any("Update your memory" in str(c.content) for c in streamed)
    assert not any('"notes"' in str(c.content) for c in streamed)
    assert any("memory_update" in tags for tags in seen.tags)  # traced all the same
