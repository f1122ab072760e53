"""Intrinsic memory in a hand-built StateGraph (`add_intrinsic_memory`): the repository's
writer/critic example and small graphs of the shapes users write, driven by fake models."""

from __future__ import annotations

import asyncio
import json
import operator
import re
import subprocess
import sys
from typing import Annotated, Any

import pytest
import writer_critic
from conftest import ROOT, Recorder, latest_turn
from intrinsic_memory import (
    AgentMemory,
    IntrinsicMemory,
    MemoryChannel,
    UsageChannel,
    add_intrinsic_memory,
    count_message_tokens,
)
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


def run_writer_critic(rounds: int, token_budget: int = 400, checkpointer: Any = None):
    model = Recorder()
    graph = writer_critic.build(model, rounds=rounds, token_budget=token_budget).compile(
        checkpointer=checkpointer
    )
    config = {"configurable": {"thread_id": "wc"}, "recursion_limit": 10 * rounds + 10}
    result = graph.invoke({"messages": [HumanMessage(writer_critic.TASK)], "rounds": 0}, config)
    return model, result


def own_memory_message(call: list[BaseMessage]) -> str:
    return next(m.text for m in call if m.text.startswith("Your own notes"))


def test_each_agent_sees_its_own_memory_within_budget_and_the_transcript_is_whole():
    model, result = run_writer_critic(rounds=4, token_budget=400)
    messages = result["messages"]
    assert len(messages) == 1 + 2 * 4  # the task, then every turn: nothing dropped or added
    assert messages[0].text == writer_critic.TASK
    assert not any(m.text.startswith("Your own notes") for m in messages)  # the view is not state
    agent_calls = model.agent_calls()
    assert len(agent_calls) == 8
    seen: dict[str, set[str]] = {"writer": set(), "critic": set()}
    for index, call in enumerate(agent_calls):
        agent = "writer" if index % 2 == 0 else "critic"
        other = "critic" if agent == "writer" else "writer"
        assert call[1].text == writer_critic.TASK  # the task, always
        notes = own_memory_message(call)
        assert f"You are the {other}" not in notes  # never the other agent's memory
        seen[agent].add(notes)
        assert count_message_tokens(call[1:]) <= 400  # all but the node's own system prompt
    assert all(len(notes) > 2 for notes in seen.values())  # memory changed over the turns
    for agent in ("writer", "critic"):
        record = result["intrinsic_memory"][agent]
        assert record["version"] == 4  # once per own turn that changed it
        assert f"You are the {agent}" in record["text"]
        assert "pending" not in record  # every output was formed into memory


def test_memory_is_updated_from_the_agents_own_turn_only():
    model, result = run_writer_critic(rounds=3)
    turns = result["messages"][1:]
    updates = model.memory_calls()
    assert len(updates) == len(turns)
    for turn, update in zip(turns, updates, strict=True):
        assert latest_turn(update[-1].text) == turn.text
        assert update[0].text == (
            writer_critic.WRITER if turn.name == "writer" else writer_critic.CRITIC
        )


def test_prompt_tokens_per_call_stay_flat_over_200_turns():
    model, _ = run_writer_critic(rounds=100, token_budget=400)
    sizes = [count_message_tokens(call) for call in model.agent_calls()]
    assert len(sizes) == 200
    assert max(sizes[50:]) <= 400 + count_message_tokens([SystemMessage(writer_critic.WRITER)])
    assert max(sizes[-50:]) <= max(sizes[50:100]) + 10  # no growth once the window is full


def test_the_async_path_gives_what_the_sync_path_gives():
    _, sync = run_writer_critic(rounds=2)
    graph = writer_critic.build(Recorder(), rounds=2, token_budget=400).compile()
    start = {"messages": [HumanMessage(writer_critic.TASK)], "rounds": 0}
    asynchronous = asyncio.run(graph.ainvoke(start))

    def normalise(memories: dict) -> dict:  # call numbers differ: each run counts its own
        return {k: re.sub(r"call \d+", "call N", v["text"]) for k, v in memories.items()}

    assert normalise(sync["intrinsic_memory"]) == normalise(asynchronous["intrinsic_memory"])
    assert [m.name for m in sync["messages"]] == [m.name for m in asynchronous["messages"]]


def test_a_checkpointed_writer_critic_resumes_after_sigkill_with_its_memories(tmp_path):
    """A real process, killed with -9 mid-exchange, resumed by another: the memories and
    the transcript equal an uninterrupted run's."""
    script = ROOT / "library" / "tests" / "writer_critic_process.py"
    db = tmp_path / "wc.sqlite"
    killed = subprocess.Popen(
        [sys.executable, str(script), str(db), "run", "--kill-after", "5"],
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = killed.communicate(timeout=120)
    assert killed.returncode == -9, out
    resumed = subprocess.run(
        [sys.executable, str(script), str(db), "resume"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    whole = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "whole.sqlite"), "run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(resumed.stdout) == json.loads(whole.stdout)
    assert json.loads(whole.stdout)["memories"]["writer"]["version"] == 3


# ------------------------------------------------------------- the view never becomes state


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    intrinsic_memory: MemoryChannel


class Log(TypedDict):
    messages: list[AnyMessage]  # replaced by what a node returns: no reducer
    intrinsic_memory: MemoryChannel


class Appended(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]
    intrinsic_memory: MemoryChannel


def two_agents(schema: type, answer: Any, model: Recorder, turns: int = 3) -> dict[str, Any]:
    """A triage agent and a specialist taking turns; each node returns `answer(state, text)`."""

    def agent(name: str):
        def node(state: dict[str, Any]) -> dict[str, Any]:
            text = model.invoke(state["messages"]).text
            return {"messages": answer(state, AIMessage(f"{name}: {text}", name=name))}

        return node

    builder = StateGraph(schema)
    memory = IntrinsicMemory(model, memory_tokens=64)
    after_a = add_intrinsic_memory(builder, "triage", agent("triage"), memory, token_budget=200)
    after_b = add_intrinsic_memory(builder, "expert", agent("expert"), memory, token_budget=200)
    builder.add_edge(START, "triage")
    builder.add_edge(after_a, "expert")
    count = lambda s: sum(m.name == "expert" for m in s["messages"])  # noqa: E731
    builder.add_conditional_edges(after_b, lambda s: END if count(s) >= turns else "triage")
    start = {"messages": [HumanMessage("Triage this ticket: the nightly upload fails.")]}
    return builder.compile().invoke(start, {"recursion_limit": 50})


@pytest.mark.parametrize(
    ("schema", "shape"),
    [
        (Chat, "answer only"),
        (Chat, "state plus answer"),
        (Log, "state plus answer"),
        (Appended, "answer only"),  # `state + [answer]` into operator.add duplicates anywhere
    ],
)
def test_whatever_a_node_returns_the_saved_conversation_holds_only_what_was_said(schema, shape):
    """A node may return its answer, or `state["messages"] + [answer]` (the view it was
    given plus its answer): either way the transcript is the whole conversation, without
    the memory or task messages made for the view, and nothing twice."""

    def answer(state: dict[str, Any], reply: AIMessage) -> list[AnyMessage]:
        return [reply] if shape == "answer only" else [*state["messages"], reply]

    result = two_agents(schema, answer, Recorder())
    texts = [m.text for m in result["messages"]]
    assert not any(t.startswith("Your own notes") for t in texts)
    assert len(texts) == 1 + 6 and len(set(texts)) == len(texts)
    assert [m.name for m in result["messages"][1:]] == ["triage", "expert"] * 3


def test_the_newest_message_is_always_seen_and_the_task_stays_on_top():
    """A long new question is never dropped for older history (the budget limits the
    older messages), and the first human message stays the task."""
    model = Recorder()
    memory = IntrinsicMemory(model, memory_tokens=64)

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(Chat)
    after = add_intrinsic_memory(builder, "agent", agent, memory, token_budget=400)
    builder.add_edge(START, "agent")
    builder.add_edge(after, END)
    graph = builder.compile()
    history = [HumanMessage("the task: answer questions about the pipeline")]
    history += [AIMessage(f"old answer {i} " + "x " * 40) for i in range(6)]
    question = HumanMessage("a long new question " + "detail " * 300)
    graph.invoke({"messages": [*history, question]})
    seen = model.agent_calls()[-1]
    assert seen[0].text == history[0].text and seen[-1].text == question.text
    assert all(m.text != history[1].text for m in seen)  # older history made room


class Counted(Chat):
    usage: UsageChannel


def test_the_memory_follows_a_template_kept_in_the_agents_record_and_usage_is_summed():
    """An agent that writes its own template (the paper's LLM-generated kind) keeps it in
    its memory record; every update's usage is summed in a state key."""

    template = "## My contributions so far\n- <what I said>\n## Open questions\n- <question>"
    model = Recorder()

    def setup(state: dict[str, Any]) -> dict[str, Any]:
        return {"intrinsic_memory": {"writer": AgentMemory(text="", version=0, template=template)}}

    def writer(state: dict[str, Any]) -> dict[str, Any]:
        turn = sum(m.name == "writer" for m in state["messages"]) + 1
        draft = f"Draft {turn}: e-bikes from {turn} June in zone{turn}, dock{turn}."
        return {"messages": [AIMessage(draft, name="writer")]}

    builder = StateGraph(Counted)
    builder.add_node("setup", setup)
    memory = IntrinsicMemory(model, memory_tokens=128)
    after = add_intrinsic_memory(
        builder, "writer", writer, memory, token_budget=512, usage_key="usage"
    )
    builder.add_edge(START, "setup")
    builder.add_edge("setup", "writer")
    builder.add_conditional_edges(after, lambda s: END if len(s["messages"]) >= 4 else "writer")
    result = builder.compile().invoke({"messages": [HumanMessage("Write a notice.")]})
    record = result["intrinsic_memory"]["writer"]
    assert record["template"] == template and record["version"] == 3
    assert record["text"].startswith("## My contributions so far")
    assert '"open_questions"' in model.memory_calls()[0][-1].text  # its own template asked
    usage = result["usage"]["writer"]["memory_update"]  # summed by the library's reducer
    assert usage["calls"] == usage["estimated_calls"] == 3  # the fake model reports none
    first_prompt = count_message_tokens(model.memory_calls()[0])
    assert usage["input_tokens"] > 2 * first_prompt  # three prompts, each longer than the last
