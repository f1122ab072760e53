"""The oracle row of a report: each task's oracle path (the optimal plan, BabyAI's bot, the
game's gold path) replayed through the environment within the episode's step limit, so the
report shows that every task is solvable in the steps the arms get: the bar they aim at."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ima.planning import SolverSettings, get_adapter


def oracle_rows(env: str, tasks: Iterable[str], settings: SolverSettings) -> list[dict[str, Any]]:
    """Per task: the oracle's reward, success and steps, replayed within the step limit."""
    adapter = get_adapter(env)
    rows = []
    for task_id in tasks:
        task = adapter.task(task_id)
        limit = settings.limit_for(task.step_limit)
        played = task.replay(task.oracle[:limit])
        rows.append(
            {
                "task": task.id,
                "family": task.family,
                "reward": played.progress,
                "success": played.success,
                "steps": len(played.actions),
                "oracle_length": len(task.oracle),
                "step_limit": limit,
            }
        )
    return rows
