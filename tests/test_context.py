"""Algorithm 1 with real (offline) tiktoken counts: task and memory always, then the most
recent turns that fit, in order, never over the budget."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from conftest import PromptRecorder, remembered_turns
from intrinsic_memory import select_window
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.core.tokens import count_tokens
from ima.meeting.agent_context import WINDOW_BLOCK, build_context, render_turn
from ima.meeting.builder import compile_graph


def turn(index: int, speaker: str, words: int) -> dict[str, Any]:
    content = " ".join(f"word{index}" for _ in range(words))
    return {
        "index": index,
        "speaker": speaker,
        "content": content,
        "tokens": count_tokens(render_turn(index, speaker, content)),
    }


def recent_turns(transcript: list[dict[str, Any]], room: int, block: int = 1) -> list[dict]:
    """The turns the library's window keeps of `transcript` in `room` tokens."""
    first = select_window(len(transcript), lambda i: transcript[i]["tokens"], room, block=block)
    return transcript[first:]


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


def test_a_meeting_whose_budget_cannot_hold_the_memory_is_refused_however_it_starts(task):
    """Every context reserves the whole memory, so a memory is never cut: a budget too small
    for it fails at the first step, in one line naming the minimum (ima run checks it
    before the run exists; Studio and the SDK reach the setup node)."""
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    context = RunContext(model="scripted", token_budget=1300, memory_tokens=512)
    with pytest.raises(UserError, match=r"token budget 1300 .* raise --budget to at least \d+"):
        graph.invoke({}, {"configurable": {"thread_id": "small"}}, context=context)
    baseline = compile_graph(task, "none", checkpointer=InMemorySaver())
    out = baseline.invoke({}, {"configurable": {"thread_id": "b"}}, context=context)
    assert out["status"] == "finalized"  # no memory to reserve


def test_every_agent_context_in_a_run_stays_within_a_small_budget(task):
    budget = 1500
    recorder = PromptRecorder()
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    out = graph.invoke(
        {},
        {"configurable": {"thread_id": "ctx"}, "callbacks": [recorder]},
        context=RunContext(
            model="scripted", token_budget=budget, memory_tokens=256, long_term=False
        ),
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
    votes = {"ACCEPT", "REJECT"}  # its last turn is a vote: it sees no other agent's vote
    visible = [
        t["index"]
        for t in out["transcript"]
        if t["index"] < meta["ima_turn"] and not votes & set(t["flags"])
    ]
    assert shown == visible[-len(shown) :]  # the newest, contiguous
    assert shown[0] > 1  # older turns were left out


def test_baseline_context_has_no_memory_but_same_budget(task):
    recorder = PromptRecorder()
    graph = compile_graph(task, "none", checkpointer=InMemorySaver())
    graph.invoke(
        {},
        {"configurable": {"thread_id": "b"}, "callbacks": [recorder]},
        context=RunContext(model="scripted", token_budget=1250),
    )
    prompts = [msgs for meta, msgs in recorder.calls if meta.get("ima_kind") == "agent_turn"]
    assert all("# Your memory" not in human.content for _, human in prompts)
    assert all(count_tokens(s.content) + count_tokens(h.content) <= 1250 for s, h in prompts)


def test_a_memory_update_sees_its_own_turn_and_the_task_only_in_the_full_layout(task):
    """In the paper prompt layout (the shared one always opens with the task)."""
    brief = task.description.strip()[:200]
    for layout, shows_task in (("lean", False), ("full", True)):
        recorder = PromptRecorder()
        graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
        out = graph.invoke(
            {},
            {"configurable": {"thread_id": layout}, "callbacks": [recorder]},
            context=RunContext(
                model="scripted", turn_cap=4, memory_prompt=layout, prompt_layout="paper"
            ),
        )
        updates = recorder.of_kind("memory_update")
        assert len(out["transcript"]) == 4 and len(updates) == len(remembered_turns(out))
        for meta, (system, human) in updates:
            own = out["transcript"][meta["ima_turn"] - 1]
            assert own["speaker"] == meta["ima_role"]
            assert own["content"] in human.content
            assert (brief in system.content) is shows_task, layout


def test_a_block_window_keeps_the_newest_turns_and_moves_its_start_in_blocks():
    transcript = [turn(i, "DEA", 20) for i in range(1, 40)]
    size = transcript[0]["tokens"]
    starts = set()
    for end in range(10, 40):
        window = recent_turns(transcript[:end], 7 * size + 3, block=3)
        indices = [t["index"] for t in window]
        assert indices == list(range(indices[0], end + 1)), "newest turns, contiguous"
        assert 5 <= len(indices) <= 7, "at most block - 1 fewer than Algorithm 1 keeps"
        assert (indices[0] - 1) % 3 == 0, "the window starts at a block boundary"
        starts.add(indices[0])
    assert sorted(starts) == list(range(4, 35, 3)), "the start moves three turns at a time"


def test_a_block_window_never_keeps_fewer_than_half_of_what_fits():
    transcript = [turn(i, "DEA", 200) for i in range(1, 10)]
    window = recent_turns(transcript, 3 * transcript[0]["tokens"], block=4)
    assert [t["index"] for t in window] == [7, 8, 9]  # aligned, only turn 9 would be left


def test_shared_layout_gives_every_speaker_the_same_task_and_turns_first(task):
    """The shared layout: the system message is the task and the roster, the user message opens with
    the recent turns, the same for whoever speaks at a turn; the speaker's role, own memory
    and question come last; every prompt within the budget, its composition recorded."""
    budget = 2304  # room for several turns beside the largest question (a voter's)
    recorder = PromptRecorder()
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    out = graph.invoke(
        {},
        {"configurable": {"thread_id": "shared"}, "callbacks": [recorder]},
        context=RunContext(
            model="scripted", token_budget=budget, memory_tokens=256, prompt_layout="shared"
        ),
    )
    turns = recorder.of_kind("agent_turn")
    assert len(turns) == len(out["transcript"]) > 20
    systems = {system.content for _, (system, _) in turns}
    assert len(systems) == 1  # the task and the roster, for every speaker
    assert task.description.strip() in next(iter(systems))
    assert all(f"{r.id} ({r.name})" in next(iter(systems)) for r in task.roles)
    starts = []
    for (meta, (system, human)), record in zip(turns, out["transcript"], strict=True):
        share = record["context"]
        total = count_tokens(system.content) + count_tokens(human.content)
        assert total <= budget, meta
        assert (
            abs(total - sum(share[k] for k in ("task", "role", "instruction", "memory", "history")))
            <= 12
        )
        role, question = human.content.index("# Your role"), human.content.index("Question for you")
        assert role < question
        voting = task.schedule.is_vote(meta["ima_role"], record["phase"])  # no votes shown
        if meta["ima_turn"] > 1 and not voting:  # the recent turns, then the speaker's parts
            first, last = share["history_turns"]
            assert last == meta["ima_turn"] - 1 and (first - 1) % WINDOW_BLOCK == 0
            assert human.content.startswith(f"Meeting notes so far (oldest first):\n[{first}] ")
            assert human.content.index(f"[{last}] ") < role
            starts.append(first)
        memory = next(
            v["text"]
            for v in reversed(out["memory_log"])
            if v["role"] == meta["ima_role"] and v["turn"] < meta["ima_turn"]
        )
        assert memory in human.content[question - len(memory) - 10 :]
    assert starts[-1] > 1, "old turns left the window"
    changes = sum(a != b for a, b in itertools.pairwise(starts))
    assert changes <= len(starts) // 3, "the window's start moves in blocks, not every turn"


def test_the_run_records_the_layout_and_the_view_explains_it(cli, tmp_path):
    code, out, err = cli(
        "run", "--model", "scripted", "--turn-cap", "4", "--prompt-layout", "shared", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["settings"]["prompt_layout"] == "shared"
    code, out, err = cli("run", "--model", "scripted", "--prompt-layout", "cached")
    assert code == 2 and "prompt_layout" in err and "Traceback" not in err


def test_in_the_shared_layout_every_documentation_call_opens_like_the_last_turn(task):
    """The documentation step's calls open with the meeting's system message (a prefix
    cache holds it from the last turn), then, but for the how-sentences, the same opening
    with the accepted proposal: only each part's own question is evaluated anew."""
    recorder = PromptRecorder()
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    out = graph.invoke(
        {},
        {"configurable": {"thread_id": "doc"}, "callbacks": [recorder]},
        context=RunContext(model="scripted", prompt_layout="shared", token_budget=4096),
    )
    assert out["status"] == "finalized"
    _, (last_system, _) = recorder.of_kind("agent_turn")[-1]
    calls = recorder.of_kind("documentation")
    # 8 components, the 20 parts of 11 requirements, 3 estimates (the GPU-hours' one
    # derivation needs no call), 4 prices, plan, summary
    assert len(calls) == 37
    assert {system.content for _, (system, _) in calls} == {last_system.content}
    hows = [user for _, (_, user) in calls if user.content.startswith("## Part: how ")]
    assert len(hows) == 20  # asked without the proposal, which a small model copied
    opened = [user.content for _, (_, user) in calls if user not in hows]
    openings = {"\n\n## ".join(text.split("\n\n## ", 2)[:2]) for text in opened}
    assert len(openings) == 1 and "## The accepted proposal" in next(iter(openings))


def test_in_the_shared_layout_memory_updates_open_with_what_every_agent_shares(task):
    """Shared layout: every memory update opens with the task (the system message of every
    call) and the same request and template; the agent's role, memory and own latest turn
    come after, so a prefix cache serves even an agent's first update."""
    for mode in ("rewrite", "edit"):
        recorder = PromptRecorder()
        graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
        out = graph.invoke(
            {},
            {"configurable": {"thread_id": mode}, "callbacks": [recorder]},
            context=RunContext(  # every turn updates (the scripted turns quote the brief)
                model="scripted",
                turn_cap=10,
                prompt_layout="shared",
                memory_update=mode,
                memory_news_words=0,
            ),
        )
        updates = recorder.of_kind("memory_update")
        turn_system = recorder.of_kind("agent_turn")[0][1][0].content
        assert {system.content for _, (system, _) in updates} == {turn_system}
        first = {meta["ima_role"]: human for meta, (_, human) in reversed(updates)}
        openings = {human.content.split("# Your role", 1)[0] for human in first.values()}
        assert len(openings) == 1, "the same request for every agent's first update"
        for meta, (_, human) in updates:
            own = out["transcript"][meta["ima_turn"] - 1]
            role = human.content.split("# Your role", 1)[1]
            assert f"({meta['ima_role']})" in role.split("\n", 2)[1]
            assert own["content"] in role
        assert all(slot["text"] for slot in out["intrinsic_memory"].values() if slot["version"])
