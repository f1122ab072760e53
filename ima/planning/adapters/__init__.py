"""The environments the benchmark plays, one adapter module each.

    from ima.planning.adapters import get_adapter

    babyai = get_adapter("babyai")
    task = babyai.task("babyai-gotolocal-s0")
    env = task.replay([])                 # a fresh episode
    env.observation(), env.valid_actions(), env.step("go forward")

An adapter's module is imported on first use, so an environment's own packages
(unified-planning, minigrid, the JVM's bridge) load only for the environment played.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from ima.core.errors import UserError
from ima.planning.adapter import Adapter, BenchTask

ADAPTERS = ("pddl", "babyai", "twc")


@cache
def get_adapter(name: str) -> Adapter:
    """The adapter of an environment: 'pddl', 'babyai' or 'twc'."""
    if name not in ADAPTERS:
        raise UserError(f"unknown benchmark {name!r}: choose one of {', '.join(ADAPTERS)}")
    module = importlib.import_module(f"ima.planning.adapters.{name}")
    return module.ADAPTER


def as_task(task: BenchTask | Any) -> BenchTask:
    """A task as the team plays it; a PDDL `Problem` (`ima.environments.pddl.get_problem`) is taken too."""
    if isinstance(task, BenchTask):
        return task
    if hasattr(task, "domain_info"):  # an ima.environments.pddl.Problem
        return get_adapter("pddl").task(task.id)
    raise TypeError(f"not a benchmark task: {task!r} (use get_adapter(NAME).task(ID))")


__all__ = ["ADAPTERS", "as_task", "get_adapter"]
