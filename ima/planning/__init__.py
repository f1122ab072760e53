"""The paper's planning benchmark team as a LangGraph graph: a planner and a helper act in a
PDDL problem (`ima.pddl`) step by step, under one of several memory arms, built on the
public intrinsic-memory API (`add_intrinsic_memory`, `IntrinsicMemory`, `write_template`).

    from ima.pddl import get_problem
    from ima.planning import Arm, SolverSettings, build_solver, episode_outcome

    graph = build_solver(get_problem("blocksworld-07"), Arm("intrinsic-generic"), model)
    state = graph.compile().invoke({}, {"recursion_limit": recursion_limit(SolverSettings())})
    episode_outcome(get_problem("blocksworld-07"), state)   # reward, success, steps, tokens
"""

from ima.planning.answers import CHECK, read_action, replay
from ima.planning.arms import ARMS, Arm, parse_arms
from ima.planning.context import task_text
from ima.planning.graph import AGENTS, build_solver
from ima.planning.outcome import Outcome, episode_outcome
from ima.planning.settings import SolverSettings, recursion_limit
from ima.planning.state import EpisodeState, Step

__all__ = [
    "AGENTS",
    "ARMS",
    "CHECK",
    "Arm",
    "EpisodeState",
    "Outcome",
    "SolverSettings",
    "Step",
    "build_solver",
    "episode_outcome",
    "parse_arms",
    "read_action",
    "recursion_limit",
    "replay",
    "task_text",
]
