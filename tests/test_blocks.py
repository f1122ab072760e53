"""Intrinsic memory in graphs that are not ours: the writer/critic StateGraph
(add_intrinsic_memory) and a create_agent supervisor whose subagents are tools
(IntrinsicMemoryMiddleware, subagent_tool), driven by fake chat models that record what
every call received (the supervisor/swarm test idiom)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from ima import fit_context
from ima.method.context import count_message_tokens

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import supervisor as supervisor_example  # noqa: E402
import writer_critic  # noqa: E402


def latest_turn(prompt: str) -> str:
    return prompt.split("## Your latest turn", 1)[1].split("\n", 1)[1].strip()


class Recorder(BaseChatModel):
    """Answers as an agent or as a memory update, from the prompt alone; records calls.

    An agent's answer names who it is (its system prompt's first words) and the call
    number; a memory update keeps the first words of the agent's latest turn as a note."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)
    script: list[AIMessage] = Field(default_factory=list)  # answers to the supervisor, in order

    @property
    def _llm_type(self) -> str:
        return "recorder"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls.append(messages)
        last = messages[-1].text
        if last.startswith("# Update your memory"):
            note = " ".join(latest_turn(last).split()[:10])
            reply = AIMessage(json.dumps({"contributions": [note]}))
        elif messages[0].text.startswith(supervisor_example.SUPERVISOR[:20]) and self.script:
            reply = self.script.pop(0)
        else:
            who = messages[0].text.split(".")[0] if isinstance(messages[0], SystemMessage) else "?"
            reply = AIMessage(f"{who} answers as call {len(self.calls)}.")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def agent_calls(self) -> list[list[BaseMessage]]:
        return [c for c in self.calls if not c[-1].text.startswith("# Update your memory")]

    def memory_calls(self) -> list[list[BaseMessage]]:
        return [c for c in self.calls if c[-1].text.startswith("# Update your memory")]


def run_writer_critic(rounds: int, budget: int = 400, checkpointer: Any = None):
    model = Recorder()
    graph = writer_critic.build(model, rounds=rounds, budget=budget).compile(
        checkpointer=checkpointer
    )
    config = {"configurable": {"thread_id": "wc"}, "recursion_limit": 10 * rounds + 10}
    result = graph.invoke({"messages": [HumanMessage(writer_critic.TASK)], "rounds": 0}, config)
    return model, result


def own_memory_message(call: list[BaseMessage]) -> str:
    return next(m.text for m in call if m.text.startswith("Your own notes"))


def test_each_agent_sees_its_own_memory_within_budget_and_the_transcript_is_whole():
    model, result = run_writer_critic(rounds=4, budget=400)
    messages = result["messages"]
    assert len(messages) == 1 + 2 * 4  # the task, then every turn: nothing dropped or added
    assert messages[0].text == writer_critic.TASK
    agent_calls = model.agent_calls()
    assert len(agent_calls) == 8
    seen = {"writer": set(), "critic": set()}
    for index, call in enumerate(agent_calls):
        agent = "writer" if index % 2 == 0 else "critic"
        other = "critic" if agent == "writer" else "writer"
        assert call[1].text == writer_critic.TASK  # the task, always
        notes = own_memory_message(call)
        assert f"You are the {other}" not in notes  # never the other agent's memory
        seen[agent].add(notes)
        # the fitted messages (all but the node's own system prompt) keep the budget
        assert count_message_tokens(call[1:]) <= 400
    assert all(len(notes) > 2 for notes in seen.values())  # memory changed over the turns
    for agent in ("writer", "critic"):
        record = result["intrinsic_memory"][agent]
        assert record["version"] == 4  # once per own turn
        assert f"You are the {agent}" in record["text"]


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
    model, _ = run_writer_critic(rounds=100, budget=400)
    sizes = [count_message_tokens(call) for call in model.agent_calls()]
    assert len(sizes) == 200
    assert max(sizes[50:]) <= 400 + count_message_tokens([SystemMessage(writer_critic.WRITER)])
    assert max(sizes[-50:]) <= max(sizes[50:100]) + 10  # no growth once the window is full


def test_the_async_path_gives_what_the_sync_path_gives():
    _, sync = run_writer_critic(rounds=2)
    graph = writer_critic.build(Recorder(), rounds=2, budget=400).compile()
    start = {"messages": [HumanMessage(writer_critic.TASK)], "rounds": 0}
    asynchronous = asyncio.run(graph.ainvoke(start))
    normalise = lambda memories: {  # noqa: E731 (call numbers differ: each run counts its own)
        k: re.sub(r"call \d+", "call N", v["text"]) for k, v in memories.items()
    }
    assert normalise(sync["intrinsic_memory"]) == normalise(asynchronous["intrinsic_memory"])
    assert [m.name for m in sync["messages"]] == [m.name for m in asynchronous["messages"]]


def test_a_checkpointed_writer_critic_resumes_after_sigkill_with_its_memories(tmp_path):
    """A real process, killed with -9 mid-exchange, resumed by another: the memories and
    the transcript equal an uninterrupted run's."""
    script = ROOT / "tests" / "writer_critic_process.py"
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


# ----------------------------------------------------------------------------- supervisor


def tool_call(name: str, request: str, call_id: str) -> dict[str, Any]:
    return {"name": name, "args": {"request": request}, "id": call_id}


def test_subagents_called_in_parallel_both_keep_their_memory_across_requests():
    model = Recorder()
    model.script = [
        AIMessage(
            "", tool_calls=[tool_call("planner", "route?", "1"), tool_call("budget", "cost?", "2")]
        ),
        AIMessage("Vienna to Amsterdam in 4 days within EUR 900."),
        AIMessage("", tool_calls=[tool_call("planner", "add Cologne", "3")]),
        AIMessage("Cologne added."),
    ]
    supervisor = supervisor_example.build(model, budget=600)
    config = {"configurable": {"thread_id": "trip"}}
    supervisor.invoke({"messages": [HumanMessage(supervisor_example.REQUESTS[0])]}, config)
    first = supervisor.get_state(config).values["intrinsic_memory"]
    assert set(first) == {"planner", "budget"}  # both parallel updates kept
    assert all(r["version"] == 1 for r in first.values())
    assert "You plan train routes" in first["planner"]["text"]
    assert "You keep the trip's budget" in first["budget"]["text"]

    supervisor.invoke({"messages": [HumanMessage(supervisor_example.REQUESTS[1])]}, config)
    second = supervisor.get_state(config).values["intrinsic_memory"]
    assert second["planner"]["version"] == 2 and second["budget"] == first["budget"]
    # the planner's second call started from a fresh conversation but saw its own memory
    planner_calls = [c for c in model.agent_calls() if c[0].text == supervisor_example.PLANNER]
    assert len(planner_calls) == 2
    assert own_memory_message(planner_calls[1]).endswith(first["planner"]["text"])
    assert "budget" not in own_memory_message(planner_calls[1]).lower()


def test_the_middleware_leaves_the_saved_transcript_unchanged():
    from langchain.agents import create_agent

    from ima import IntrinsicMemory, IntrinsicMemoryMiddleware

    model = Recorder()
    middleware = IntrinsicMemoryMiddleware(IntrinsicMemory(model), agent="solo", budget=200)
    agent = create_agent(
        model, system_prompt="You are solo.", middleware=[middleware], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "solo"}}
    for i in range(12):
        agent.invoke({"messages": [HumanMessage(f"question {i} " + "detail " * 30)]}, config)
    saved = agent.get_state(config).values["messages"]
    assert len(saved) == 24  # every question and answer is kept in the thread
    last_call = model.agent_calls()[-1]
    assert len(last_call) < len(saved)  # ...while the model saw a budgeted window
    assert count_message_tokens(last_call[1:]) <= 200 + 60  # one whole question may overflow
    assert agent.get_state(config).values["intrinsic_memory"]["solo"]["version"] == 12


def test_fit_context_keeps_a_tool_call_with_its_result():
    from langchain_core.messages import ToolMessage

    call = AIMessage("", tool_calls=[tool_call("planner", "x" * 200, "7")])
    result = ToolMessage("y " * 50, tool_call_id="7")
    messages = [HumanMessage("the task"), call, result, AIMessage("done")]
    for budget in range(20, 400, 10):
        fitted = fit_context(messages, "", budget=budget)
        kept = fitted[2:]
        assert (call in kept) == (result in kept)
        assert not kept or not isinstance(kept[0], ToolMessage)


def test_importing_the_library_loads_no_part_of_the_app():
    code = (
        "import sys, langgraph.graph, langchain.agents\n"
        "before = set(sys.modules)\n"
        "import ima\n"
        "for name in ima.__all__: getattr(ima, name)\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    app = ("ima.cli", "ima.runs", "ima.evals", "ima.view")
    banned = ("rich", "typer", "psycopg", "psycopg_pool", "matplotlib", "scipy", "jinja2")
    assert [m for m in loaded if m.startswith(app) or m.split(".")[0] in banned] == []
    assert "ima.method.memory_update" in loaded and "ima.blocks.middleware" in loaded


@pytest.mark.parametrize("example", ["writer_critic.py", "supervisor.py"])
def test_examples_mark_the_lines_they_add(example):
    lines = (ROOT / "examples" / example).read_text().splitlines()
    marked = [line for line in lines if "  # +" in line and line.split("#")[0].strip()]
    assert 1 <= len(marked) <= 5  # two agents each: the goal is at most 10, 5 per subagent


def test_the_reference_page_documents_every_public_name_as_the_code_does():
    """docs/reference.md is generated from the docstrings; a stale page fails here."""
    import ima

    undocumented = [n for n in ima.__all__ if not (getattr(ima, n).__doc__ or "").strip()]
    assert undocumented == []
    check = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_reference.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
