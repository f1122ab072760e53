"""Memory formation beside the next turn (memory_concurrency 2): the same conversation and
memories as the paper's strict order, with each memory update overlapping the next turn."""

from __future__ import annotations

import threading
import time
from typing import Any

from conftest import remembered_turns
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from ima.core.settings import RunContext
from ima.meeting.builder import compile_graph


class CallTimes(BaseCallbackHandler):
    """(kind, role, start, end) of every model call, from LangChain's callbacks."""

    def __init__(self) -> None:
        self.calls: dict[Any, list[Any]] = {}
        self.lock = threading.Lock()

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs):  # type: ignore[override]
        meta = metadata or {}
        with self.lock:
            self.calls[run_id] = [
                meta.get("ima_kind"),
                meta.get("ima_role"),
                time.monotonic(),
                None,
            ]

    def on_llm_end(self, response, *, run_id, **kwargs):  # type: ignore[override]
        with self.lock:
            self.calls[run_id][3] = time.monotonic()


def run(task, concurrency: int, callbacks: list[Any] | None = None, **settings: Any) -> dict:
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "callbacks": callbacks or []}
    context = RunContext(**{"model": "scripted", "memory_concurrency": concurrency, **settings})
    return graph.invoke({}, config, context=context)


def test_concurrent_formation_gives_the_same_run_as_the_strict_order(task):
    strict, concurrent = run(task, 1), run(task, 2)
    assert concurrent["status"] == strict["status"] == "finalized"

    def untimed(entries: list[dict]) -> list[dict]:  # everything but the time calls took
        return [e | {"usage": {**e["usage"], "seconds": 0}} if "usage" in e else e for e in entries]

    assert untimed(concurrent["transcript"]) == untimed(strict["transcript"])
    assert concurrent["memories"] == strict["memories"]
    key = lambda v: (v["role"], v["version"])  # noqa: E731  (the log's order differs)
    logs = [sorted(untimed(out["memory_log"]), key=key) for out in (concurrent, strict)]
    assert logs[0] == logs[1]
    assert concurrent["final"] == strict["final"]


def test_each_memory_update_runs_beside_the_next_turn(task):
    times = CallTimes()
    out = run(task, 2, [times], model="scripted:delay=0.05")
    calls = sorted(times.calls.values(), key=lambda c: c[2])
    updates = [c for c in calls if c[0] == "memory_update"]
    turns = [c for c in calls if c[0] == "agent_turn"]
    assert len(turns) == len(out["transcript"]) and len(updates) == len(remembered_turns(out))
    overlapping = [
        u for u in updates if any(t[1] != u[1] and t[2] < u[3] and u[2] < t[3] for t in turns)
    ]
    # all but an update after the last turn (it finishes before the documentation starts)
    assert len(overlapping) >= len(updates) - 1
    documentation = next(c for c in calls if c[0] == "documentation")
    assert all(u[3] <= documentation[2] for u in updates)  # joined before documentation


def test_the_review_interrupt_waits_for_every_memory(task):
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "r"}}
    context = RunContext(model="scripted", memory_concurrency=2, review=True)
    graph.invoke({}, config, context=context)
    snapshot = graph.get_state(config)
    assert snapshot.next == ("human_review",)
    values = snapshot.values
    for role, slot in values["memories"].items():
        own = [t["index"] for t in values["transcript"] if t["speaker"] == role]
        assert slot["turn"] == own[-1], role  # every agent's latest turn is in memory
    out = graph.invoke(Command(resume={"approve": True}), config, context=context)
    assert out["status"] == "finalized"


def test_the_default_is_sequential_in_process_and_concurrent_on_a_server():
    from ima.models import parallel_calls

    assert parallel_calls(RunContext(model="embedded")) == 1
    assert parallel_calls(RunContext(model="scripted")) == 1
    assert parallel_calls(RunContext(model="ollama:qwen2.5:7b")) == 2
    assert parallel_calls(RunContext(model="ollama:a", memory_model="embedded")) == 1
