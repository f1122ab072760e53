"""The shape every text environment shares, so one harness can drive any of them.

An environment plays one bundled task (`EnvTask`): an agent reads `observation()` and
`valid_actions()`, answers with one action as text, and `step` says what happened. It is
rebuilt from its actions alone (`replay(task, actions)`), so a checkpointed episode keeps
only the action list. An invalid action (unreadable, unknown, impossible now) never raises:
it changes nothing, its message says why, and it is kept in `actions` like any other step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable


def step_limit_for(oracle_length: int) -> int:
    """A task's step limit from its oracle's path length: twice the path, and at least ten
    answers to spare (a short path leaves room to look around and recover from a mistake)."""
    return max(2 * oracle_length, oracle_length + 10)


@dataclass(frozen=True)
class EnvTask:
    """One bundled task of a text environment (`ima.environments.get_task(id)`)."""

    id: str
    """Unique id, e.g. 'babyai-gotolocal-s3' or 'twc-rooms1-items2-s20001'."""
    environment: str
    """Which environment plays it: 'babyai' or 'twc'."""
    family: str
    """The BabyAI level ('GoToLocal') or the game setting ('twc-rooms1-items2')."""
    seed: int
    """The seed the level or game is generated from."""
    goal: str
    """The mission in words, as the environment states it (for a prompt)."""
    step_limit: int
    """Answers allowed, invalid ones included: `step_limit_for(len(oracle))`."""
    oracle: tuple[str, ...]
    """Text actions that solve the task (BabyAI's bot, the game's gold path)."""
    params: tuple[tuple[str, int], ...] = ()
    """Generation parameters beyond the family and seed (TWC's game parameters)."""

    @property
    def oracle_length(self) -> int:
        return len(self.oracle)


@dataclass(frozen=True)
class StepResult:
    """What one step did (the same fields as `ima.environments.pddl.StepResult`)."""

    action: str
    """The action text as given."""
    valid: bool
    """Whether it did something (an invalid one changed nothing)."""
    message: str
    """For the agent: what happened, or why the action was not possible."""
    progress: float
    """The environment's progress after this step, 0..1."""
    goal_reached: bool
    """Whether the task is solved."""


@runtime_checkable
class TextEnvironment(Protocol):
    """One episode of a task, driven by text."""

    @property
    def task(self) -> EnvTask: ...

    def observation(self) -> str:
        """What the agent perceives now, in words."""
        ...

    def valid_actions(self) -> tuple[str, ...]:
        """The actions that would do something now, in a fixed order."""
        ...

    def step(self, action: str) -> StepResult:
        """Take one action given as text; never raises for anything an agent writes."""
        ...

    @property
    def progress(self) -> float:
        """The environment's own progress or score, 0..1."""
        ...

    @property
    def success(self) -> bool:
        """Whether the task was solved."""
        ...

    @property
    def done(self) -> bool:
        """Whether the episode is over (solved or failed): every further step is invalid."""
        ...

    @property
    def actions(self) -> tuple[str, ...]:
        """Every action text given to `step`, valid or not, in order (what `replay` needs)."""
        ...

    @classmethod
    def replay(cls, task: EnvTask, actions: Iterable[str]) -> Self:
        """The environment after these actions, identical to when they were first taken."""
        ...


def same_action(text: object) -> str:
    """An action as compared: lower case, single spaces, no surrounding quotes or final
    period ('  Go  Forward. ' -> 'go forward')."""
    if not isinstance(text, str):
        return ""
    return " ".join(text.strip().strip("`'\"").lower().split()).rstrip(".").strip()
