"""Where the meeting graph is assembled: `create_meeting` (and `compile_graph` on it), the one
factory of the meeting that the CLI, the tests, the benchmarks and langgraph.json use. It is
the application's graph, not the library's API: a graph of your own takes intrinsic memory
from `intrinsic_memory` (`add_intrinsic_memory`, `IntrinsicMemoryMiddleware`).

It reads like the architecture: setup, then the router choosing the next speaker; each
agent node is followed by its own memory-update node (intrinsic mode) and the router; the
router's FINALIZE / turn-cap edge leads to the documentation node, then learning, then END.
With `memory_concurrency` 2 an agent's turn goes to the router first, which runs the
agent's memory update beside the next speaker's turn.
"""

from __future__ import annotations

from typing import Any

from intrinsic_memory import DOCUMENTATION
from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ima.core.settings import MemoryMode, RunContext
from ima.core.state import InputState, State
from ima.meeting.nodes.agent import make_agent_node
from ima.meeting.nodes.documentation import make_documentation_node
from ima.meeting.nodes.learning import LEARN, make_learning_node
from ima.meeting.nodes.memory_update import make_memory_node, memory_node_name
from ima.meeting.nodes.review import REVIEW, make_review_node
from ima.meeting.nodes.router import ROUTER, after_turn, make_router_node, route
from ima.meeting.nodes.setup import make_setup_node
from ima.models import Models
from ima.tasks import Task


def create_meeting(
    task: Task,
    *,
    memory: MemoryMode = "intrinsic",
    model: BaseChatModel | None = None,
    memory_model: BaseChatModel | None = None,
) -> StateGraph:
    """The uncompiled graph of a scheduled meeting on `task`: its roles as agent nodes,
    the task's schedule (the paper's modified round robin, consensus votes, FINALIZE), the
    final documentation, and, with `memory="intrinsic"`, each agent's memory-update node
    and long-term learning at the end (`"none"`: the memoryless baseline).

    Args:
        task: roles, schedule, brief and output schema (`load_task("data-pipeline")`, a
            YAML file via `load_task(path)`, or a `Task` built in Python).
        memory: "intrinsic" or "none".
        model: the agents' chat model; None takes the run setting `model` (a spec such as
            "ollama:qwen2.5:7b") from the graph's context at run time.
        memory_model: the model of memory updates; None: `memory_model` setting, else the
            agents' model.

    Run settings (token budget, memory budget, template, turn cap, ...) are the graph's
    context schema, `RunContext`: `graph.invoke({}, config, context=RunContext(...))`.
    Compile it with your checkpointer and store: `create_meeting(task).compile(...)`.
    """
    models = Models(model, memory_model)
    with_memory = memory == "intrinsic"
    graph = StateGraph(State, input_schema=InputState, context_schema=RunContext)
    graph.add_node("setup", make_setup_node(task, with_memory, models))
    graph.add_node(ROUTER, make_router_node(task))
    memory_nodes = []
    for role_id in task.speakers:
        graph.add_node(role_id, make_agent_node(task, role_id, with_memory, models))
        if with_memory:  # each agent is followed by its own memory update
            memory_node = memory_node_name(role_id)
            memory_nodes.append(memory_node)
            graph.add_node(memory_node, make_memory_node(task, role_id, models))
            graph.add_conditional_edges(role_id, after_turn(role_id), [memory_node, ROUTER])
            graph.add_edge(memory_node, ROUTER)
        else:
            graph.add_edge(role_id, ROUTER)
    graph.add_node(DOCUMENTATION, make_documentation_node(task, models))
    first = task.schedule.facilitator
    graph.add_node(REVIEW, make_review_node(task), destinations=(first,))
    graph.add_edge(START, "setup")
    graph.add_edge("setup", ROUTER)
    graph.add_conditional_edges(
        ROUTER, route, [*task.speakers, *memory_nodes, DOCUMENTATION, REVIEW]
    )
    if with_memory:  # what the run taught each agent goes to long-term memory
        graph.add_node(LEARN, make_learning_node())
        graph.add_edge(DOCUMENTATION, LEARN)
        graph.add_edge(LEARN, END)
    else:
        graph.add_edge(DOCUMENTATION, END)
    return graph


def compile_graph(
    task: Task,
    memory_mode: MemoryMode = "intrinsic",
    *,
    model: BaseChatModel | None = None,
    memory_model: BaseChatModel | None = None,
    **kwargs: Any,
) -> CompiledStateGraph:
    """Compile with e.g. `checkpointer=`, `store=`; the graph is named after task and mode."""
    name = f"{task.id}:{memory_mode}"
    graph = create_meeting(task, memory=memory_mode, model=model, memory_model=memory_model)
    return graph.compile(name=name, **kwargs)
