"""The learning node, after the documentation: what the finished run taught each agent goes
to long-term memory through the graph's store (`runtime.store`: the one `ima` opens, or the
LangGraph server's), so runs from the CLI, Studio and the SDK all learn the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import State
from ima.longterm import learn_from_run

LEARN = "learn"


def make_learning_node() -> Callable[..., dict[str, Any]]:
    def learn(state: State, runtime: Runtime[RunContext], config: RunnableConfig) -> dict[str, Any]:
        thread = str((config.get("configurable") or {}).get("thread_id", ""))
        report = learn_from_run(runtime.context, runtime.store, thread, state)
        start = (state.get("long_term") or {}).get("start", {})
        return {"long_term": {"start": start, "learned": report}}

    return learn
