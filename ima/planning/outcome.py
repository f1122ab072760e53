"""An episode's result from its final state: the reward (the environment's progress),
success, the steps taken and the tokens every model call cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ima.planning.adapter import BenchTask
from ima.planning.adapters import as_task
from ima.planning.answers import actions_of


@dataclass(frozen=True)
class Outcome:
    """What an episode achieved and cost."""

    reward: float  # the environment's progress (PDDL: AgentBoard's progress rate)
    success: bool  # the task was solved
    steps: int
    valid_steps: int  # steps whose action the environment applied (checks included)
    input_tokens: int
    output_tokens: int
    calls: int
    usage: dict[str, dict[str, Any]]  # per agent, per kind of call

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def episode_outcome(task: BenchTask | Any, state: Mapping[str, Any]) -> Outcome:
    """The outcome of an episode (finished or not) from its graph state; the reward is
    recomputed by replaying its actions, not read from what the agents saw (a PDDL
    `Problem` is taken as the task too)."""
    steps = list(state.get("steps") or [])
    env = as_task(task).replay(actions_of(steps))
    usage = {agent: dict(kinds) for agent, kinds in (state.get("usage") or {}).items()}
    calls = [u for kinds in usage.values() for u in kinds.values()]
    return Outcome(
        reward=env.progress,
        success=env.success,
        steps=len(steps),
        valid_steps=sum(s["valid"] for s in steps),
        input_tokens=sum(u["input_tokens"] for u in calls),
        output_tokens=sum(u["output_tokens"] for u in calls),
        calls=sum(u["calls"] for u in calls),
        usage=usage,
    )
