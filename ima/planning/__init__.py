"""The paper's planning-benchmark team as a LangGraph graph: a planner and a helper act in a
task step by step, under one of several memory arms, built on the public intrinsic-memory
API (`add_intrinsic_memory`, `IntrinsicMemory`, `write_template`). Any environment with an
adapter plays (`ima.planning.adapters`: PDDL, BabyAI, TextWorld Commonsense).

    from ima.planning import Arm, SolverSettings, build_solver, episode_outcome, get_adapter

    task = get_adapter("pddl").task("blocksworld-07")   # or a PDDL Problem
    settings = SolverSettings()
    graph = build_solver(task, Arm("intrinsic-generic"), model, settings)
    state = graph.compile().invoke({}, {"recursion_limit": recursion_limit(settings)})
    episode_outcome(task, state)   # reward, success, steps, tokens
"""

from ima.planning.adapter import Adapter, BenchTask, Published
from ima.planning.adapters import ADAPTERS, as_task, get_adapter
from ima.planning.answers import CHECK, read_action
from ima.planning.arms import ARMS, Arm, parse_arms
from ima.planning.context import task_text
from ima.planning.graph import AGENTS, build_solver
from ima.planning.outcome import Outcome, episode_outcome
from ima.planning.settings import SolverSettings, recursion_limit
from ima.planning.state import EpisodeState, Step

__all__ = [
    "ADAPTERS",
    "AGENTS",
    "ARMS",
    "CHECK",
    "Adapter",
    "Arm",
    "BenchTask",
    "EpisodeState",
    "Outcome",
    "Published",
    "SolverSettings",
    "Step",
    "as_task",
    "build_solver",
    "episode_outcome",
    "get_adapter",
    "parse_arms",
    "read_action",
    "recursion_limit",
    "task_text",
]
