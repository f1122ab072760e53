"""Where the graph is assembled: the one factory used by the CLI, the tests, the
benchmarks and langgraph.json.

It reads like the architecture: setup, then the router choosing the next speaker; each
agent node is followed by its own memory-update node (intrinsic mode) and the router; the
router's FINALIZE / turn-cap edge leads to the documentation node, then learning, then END.
With `memory_concurrency` 2 an agent's turn goes to the router first, which runs the
agent's memory update beside the next speaker's turn.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ima.core.settings import MemoryMode, RunContext
from ima.core.state import InputState, State
from ima.method.schedule import DOCUMENTATION
from ima.nodes.agent import make_agent_node
from ima.nodes.documentation import make_documentation_node
from ima.nodes.learning import LEARN, make_learning_node
from ima.nodes.memory_update import make_memory_node, memory_node_name
from ima.nodes.review import REVIEW, make_review_node
from ima.nodes.router import ROUTER, after_turn, make_router_node, route
from ima.nodes.setup import make_setup_node
from ima.tasks import Task


def build_graph(task: Task, memory_mode: MemoryMode = "intrinsic") -> StateGraph:
    """The uncompiled graph for `task`; `none` is the memoryless baseline."""
    with_memory = memory_mode == "intrinsic"
    graph = StateGraph(State, input_schema=InputState, context_schema=RunContext)
    graph.add_node("setup", make_setup_node(task, with_memory))
    graph.add_node(ROUTER, make_router_node(task))
    memory_nodes = []
    for role_id in task.speakers:
        graph.add_node(role_id, make_agent_node(task, role_id, with_memory))
        if with_memory:  # each agent is followed by its own memory update
            memory = memory_node_name(role_id)
            memory_nodes.append(memory)
            graph.add_node(memory, make_memory_node(task, role_id))
            graph.add_conditional_edges(role_id, after_turn(role_id), [memory, ROUTER])
            graph.add_edge(memory, ROUTER)
        else:
            graph.add_edge(role_id, ROUTER)
    graph.add_node(DOCUMENTATION, make_documentation_node(task))
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
    task: Task, memory_mode: MemoryMode = "intrinsic", **kwargs: Any
) -> CompiledStateGraph:
    """Compile with e.g. `checkpointer=`, `store=`; the graph is named after task and mode."""
    name = f"{task.id}:{memory_mode}"
    return build_graph(task, memory_mode).compile(name=name, **kwargs)
