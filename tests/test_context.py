"""Algorithm 1 with real (offline) tiktoken counts: task and memory always, then the most
recent turns that fit, in order, never over the budget."""

from __future__ import annotations

from typing import Any

from conftest import PromptRecorder
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.settings import RunContext
from ima.core.tokens import count_tokens
from ima.graph.builder import compile_graph
from ima.method.agent_context import build_context, recent_turns, render_turn


def turn(index: int, speaker: str, words: int) -> dict[str, Any]:
    content = " ".join(f"word{index}" for _ in range(words))
    return {
        "index": index,
        "speaker": speaker,
        "content": content,
        "tokens": count_tokens(render_turn(index, speaker, content)),
    }


def test_recent_turns_keeps_newest_in_order_within_budget():
    transcript = [turn(i, "DEA", 20) for i in range(1, 30)]
    budget = 5 * transcript[0]["tokens"] + 3
    kept = recent_turns(transcript, budget)
    assert [t["index"] for t in kept] == [25, 26, 27, 28, 29]


def test_memory_beats_old_history():
    transcript = [turn(i, "BOA", 30) for i in range(1, 10)]
    memory = "requirement: blur faces before anyone sees data " * 10
    ctx = build_context(
        fixed_tokens=100,
        memory=memory,
        transcript=transcript,
        budget=100 + count_tokens(memory) + 60,
    )
    assert ctx.memory == memory  # memory kept whole
    assert ctx.tokens <= 100 + count_tokens(memory) + 60
    assert [t["index"] for t in ctx.turns] == list(range(10 - len(ctx.turns), 10))


def test_a_memory_over_the_room_keeps_whole_lines_only():
    """Bounded memories always fit (the settings are checked); an older, unbounded one is
    shortened by whole lines, never inside one, and the budget still holds."""
    memory = "\n".join(f"- note {i} " + "lorem ipsum " * 10 for i in range(20))
    ctx = build_context(fixed_tokens=50, memory=memory, transcript=[turn(1, "IA", 5)], budget=120)
    assert ctx.tokens <= 120
    assert ctx.memory and all(line in memory.splitlines() for line in ctx.memory.splitlines())


def test_every_agent_context_in_a_run_stays_within_a_small_budget(task):
    budget = 1100
    recorder = PromptRecorder()
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    out = graph.invoke(
        {},
        {"configurable": {"thread_id": "ctx"}, "callbacks": [recorder]},
        context=RunContext(model="scripted", token_budget=budget),
    )
    turns = [(meta, msgs) for meta, msgs in recorder.calls if meta.get("ima_kind") == "agent_turn"]
    assert len(turns) == len(out["transcript"])
    for meta, (system, human) in turns:
        assert count_tokens(system.content) + count_tokens(human.content) <= budget, meta

    # A late agent: the last ERA turn sees the task, its own memory, and only recent turns.
    meta, (system, human) = next((m, msgs) for m, msgs in reversed(turns) if m["ima_role"] == "ERA")
    assert task.description.strip()[:200] in system.content

    def memory_before(role: str) -> str:  # the role's memory as it was when ERA spoke
        versions = [
            v for v in out["memory_log"] if v["role"] == role and v["turn"] < meta["ima_turn"]
        ]
        return versions[-1]["text"]

    assert memory_before("ERA") in human.content
    assert memory_before("KIA") not in human.content
    shown = [
        t["index"] for t in out["transcript"] if f"[{t['index']}] {t['speaker']}:" in human.content
    ]
    assert shown, "some recent turns fit"
    assert shown == list(
        range(meta["ima_turn"] - len(shown), meta["ima_turn"])
    )  # the newest, contiguous
    assert shown[0] > 1  # older turns were left out


def test_baseline_context_has_no_memory_but_same_budget(task):
    recorder = PromptRecorder()
    graph = compile_graph(task, "none", checkpointer=InMemorySaver())
    graph.invoke(
        {},
        {"configurable": {"thread_id": "b"}, "callbacks": [recorder]},
        context=RunContext(model="scripted", token_budget=1100),
    )
    prompts = [msgs for meta, msgs in recorder.calls if meta.get("ima_kind") == "agent_turn"]
    assert all("# Your memory" not in human.content for _, human in prompts)
    assert all(count_tokens(s.content) + count_tokens(h.content) <= 1100 for s, h in prompts)


def test_a_memory_update_sees_its_own_turn_and_the_task_only_in_the_full_layout(task):
    brief = task.description.strip()[:200]
    for layout, shows_task in (("lean", False), ("full", True)):
        recorder = PromptRecorder()
        graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
        out = graph.invoke(
            {},
            {"configurable": {"thread_id": layout}, "callbacks": [recorder]},
            context=RunContext(model="scripted", turn_cap=4, memory_prompt=layout),
        )
        updates = recorder.of_kind("memory_update")
        assert len(updates) == len(out["transcript"]) == 4
        for meta, (system, human) in updates:
            own = out["transcript"][meta["ima_turn"] - 1]
            assert own["speaker"] == meta["ima_role"]
            assert own["content"] in human.content
            assert (brief in system.content) is shows_task, layout
