"""Whole graph runs on the real embedded model (llama.cpp): reproducible with a seed."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.settings import RunContext
from ima.graph.builder import compile_graph

pytestmark = pytest.mark.model


def test_same_seed_same_transcript_with_the_embedded_model(task):
    def run() -> list[tuple[str, str]]:
        graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
        settings = RunContext(
            model="embedded",
            turn_cap=2,
            seed=5,
            max_turn_words=20,
            memory_tokens=64,
            long_term=False,
        )
        out = graph.invoke({}, {"configurable": {"thread_id": "det"}}, context=settings)
        assert out["final"]["valid"], out["final"]["error"]  # grammar-constrained JSON validates
        assert all(
            u["estimated_calls"] == 0 for kinds in out["usage"].values() for u in kinds.values()
        )
        return [(t["speaker"], t["content"]) for t in out["transcript"]] + [
            (role, slot["text"]) for role, slot in sorted(out["memories"].items())
        ]

    first = run()
    assert first and all(text for _, text in first[:2])
    assert run() == first
