"""Graphs for the LangGraph server (`langgraph dev`, LangGraph Studio, the SDK).

langgraph.json names two graph factories: `intrinsic` (agents with intrinsic memory) and
`baseline` (the same roles and schedule without memory). Both build the graph with the one
factory the CLI and the tests use (`compile_graph`), without a checkpointer or store: the
server brings its own.

The server calls a factory each time it needs the graph (to run it, draw it, or read a
thread's state) and passes the assistant's configuration, whose `configurable` mirrors the
assistant's context. The graph's shape depends on the task (one node per role), so the task
is a setting of the assistant: the context field `task`, a bundled task id or a path to a
task YAML file (relative to the server's working directory). Without it the graph is the
data-pipeline task, so the graph view renders with no context at all.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from pathlib import Path

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from pydantic import Field

from ima.core.settings import MemoryMode, RunContext
from ima.meeting.builder import compile_graph
from ima.tasks import load_task

DEFAULT_TASK = "data-pipeline"


class ServerContext(RunContext):
    """The run settings plus the task, as Studio shows them (the graph's context schema)."""

    task: str = Field(
        DEFAULT_TASK,
        description="Task id (see `ima tasks`) or path to a task YAML file. It shapes the "
        "graph, so set it on an assistant: the graph view, the thread state and every run of "
        "that assistant then use the same task.",
    )


def _file_stamp(ref: str) -> tuple[int, int] | None:
    """Modification time and size of a task file, so an edited file is loaded again."""
    try:
        stat = Path(ref).stat()
    except OSError:
        return None  # a bundled task id
    return stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=32)
def _compiled(
    ref: str, memory_mode: MemoryMode, stamp: tuple[int, int] | None
) -> CompiledStateGraph:
    graph = compile_graph(load_task(ref), memory_mode)  # UserError is a ValueError: shown
    return graph.copy(update={"context_schema": ServerContext})


def graph_for(config: RunnableConfig | None, memory_mode: MemoryMode) -> CompiledStateGraph:
    """The compiled graph for the task named in `config` (default: data-pipeline)."""
    ref = str(((config or {}).get("configurable") or {}).get("task") or DEFAULT_TASK)
    return _compiled(ref, memory_mode, _file_stamp(ref))


# The factories are coroutines: loading a task reads files, which must not block the server's
# event loop (`langgraph dev` fails such calls), so the work runs in a thread.


async def intrinsic(config: RunnableConfig) -> CompiledStateGraph:
    """Role agents, each followed by its own memory-update node."""
    return await asyncio.to_thread(graph_for, config, "intrinsic")


async def baseline(config: RunnableConfig) -> CompiledStateGraph:
    """The memoryless baseline: same roles and schedule, no memory nodes."""
    return await asyncio.to_thread(graph_for, config, "none")
