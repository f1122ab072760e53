"""Offline text environments with the PDDL environment's shape, so one harness drives all.

    from ima.environments import get_task, list_tasks, make

    task = get_task("babyai-gotolocal-s1")   # or list_tasks("twc")
    env = make(task)                          # BabyAIEnv or TWCEnv (a TextEnvironment)
    env.observation(), env.valid_actions()
    result = env.step("go forward")           # StepResult: valid, message, progress, ...
    env.progress, env.success, env.actions
    same = replay(task, env.actions)          # rebuilt from the actions alone

BabyAI (`babyai.py`, minigrid levels from a name and a seed) is in the paper authors' newer
code; TextWorld Commonsense (`twc.py`, TextWorldExpress on Java) is the offline cousin of the
paper's ALFWorld. The tasks, their oracle paths and step limits are data (`tasks/*.yaml`,
written by `python -m benchmarks.env_catalog`). The environments' modules are imported on
first use: minigrid and py4j load only for the environment played.
"""

from __future__ import annotations

from collections.abc import Iterable

from ima.core.errors import UserError
from ima.environments.base import EnvTask, StepResult, TextEnvironment, step_limit_for
from ima.environments.catalog import ENVIRONMENTS, get_task, list_tasks


def environment_class(environment: str) -> type[TextEnvironment]:
    """The class that plays an environment's tasks ('babyai' or 'twc')."""
    if environment == "babyai":
        from ima.environments.babyai import BabyAIEnv

        return BabyAIEnv
    if environment == "twc":
        from ima.environments.twc import TWCEnv

        return TWCEnv
    raise UserError(
        f"unknown text environment {environment!r}: choose one of {', '.join(ENVIRONMENTS)}"
    )


def make(task: EnvTask | str) -> TextEnvironment:
    """A fresh episode of a task (give the `EnvTask` or its id)."""
    task = get_task(task) if isinstance(task, str) else task
    return environment_class(task.environment)(task)  # type: ignore[call-arg]


def replay(task: EnvTask | str, actions: Iterable[str]) -> TextEnvironment:
    """The episode after these actions, identical to when they were first taken."""
    task = get_task(task) if isinstance(task, str) else task
    return environment_class(task.environment).replay(task, actions)


__all__ = [
    "ENVIRONMENTS",
    "EnvTask",
    "StepResult",
    "TextEnvironment",
    "environment_class",
    "get_task",
    "list_tasks",
    "make",
    "replay",
    "step_limit_for",
]
