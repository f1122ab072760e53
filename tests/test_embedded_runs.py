"""Whole graph runs on the real embedded model (llama.cpp): reproducible with a seed."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.settings import RunContext
from ima.meeting.builder import compile_graph

pytestmark = pytest.mark.model


def test_same_seed_same_transcript_with_the_embedded_model(task):
    """Twice the same meeting with one seed: the same turns and memories, every count the
    model's own. (The embedded model's design is checked in test_eval_model.py: its
    documentation takes minutes on CI.)"""
    settings = RunContext(
        model="embedded",
        turn_cap=2,
        seed=5,
        max_turn_words=20,
        memory_tokens=64,
        long_term=False,
    )

    def run(thread: str) -> tuple[dict, list[tuple[str, str]]]:
        graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": thread}}
        out = graph.invoke({}, config, context=settings, interrupt_before=["documentation"])
        return out, [(t["speaker"], t["content"]) for t in out["transcript"]] + [
            (role, slot["text"]) for role, slot in sorted(out["intrinsic_memory"].items())
        ]

    out, first = run("first")
    assert first and all(text for _, text in first[:2])
    assert run("again")[1] == first
    assert all(u["estimated_calls"] == 0 for kinds in out["usage"].values() for u in kinds.values())


def test_the_shared_layout_is_served_from_the_cache_across_agents(task):
    """In the shared layout the next speaker's prompt repeats the previous speaker's up to
    the newest turn: the engine serves that prefix (whole 64-token blocks) from the
    previous speaker's saved state, and the run is the same again with a warm cache."""
    from conftest import PromptRecorder

    from ima.models import llamacpp

    def run() -> tuple[dict, PromptRecorder]:
        recorder = PromptRecorder()
        graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
        settings = RunContext(
            turn_cap=3,
            max_turn_words=60,
            memory_tokens=64,
            long_term=False,
            prompt_layout="shared",
        )
        config = {"configurable": {"thread_id": "shared"}, "callbacks": [recorder]}
        # the turns are what this test is about: the design's calls would only take time
        out = graph.invoke({}, config, context=settings, interrupt_before=["documentation"])
        return out, recorder

    out, recorder = run()
    prompts = [msgs for _, msgs in recorder.of_kind("agent_turn")]
    engine = next(iter(llamacpp._ENGINES.values()))

    def tokens(messages: list) -> list[int]:
        return engine.tokenize([llamacpp._to_message(m) for m in messages])

    second, third = tokens(prompts[1]), tokens(prompts[2])  # BOA, then CDA
    shared = llamacpp._common_prefix(second, third)
    system = len(tokens(prompts[2][:1]))
    assert shared > system, "the turns come before the speaker's own parts"
    cached = out["transcript"][2]["usage"]["cached_tokens"]
    assert cached == min(shared, len(third) - 1) // llamacpp.BLOCK * llamacpp.BLOCK
    again, _ = run()
    assert [t["content"] for t in again["transcript"]] == [t["content"] for t in out["transcript"]]
    assert again["intrinsic_memory"] == out["intrinsic_memory"]
