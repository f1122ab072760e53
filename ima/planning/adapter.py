"""What the team and the benchmark harness need of an environment: its adapter.

An adapter (`ima.planning.adapters`, one small module per environment) makes a task from
its id, plays it as text (`replay(task, actions)` gives the environment after those
actions: its observation, valid actions, `step`), scores it (`progress`: the progress rate
where the environment has one), gives the oracle's action path, and names its prompt
folder, `ima/prompts/<name>/`: the task text, the two roles and the manual memory template.
Everything else (the team, the memory arms, the queue, the report, the pages) is the same
for every environment.

Tasks are deterministic given their id (a generated level's or game's seed is part of
it): the benchmark's seeds drive the model's sampling, never the task.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ima import prompts


class Playable(Protocol):
    """An episode of a task being played (`ima.environments.pddl.Env`, `ima.environments.TextEnvironment`)."""

    def observation(self) -> str: ...

    def valid_actions(self) -> tuple[str, ...]: ...

    def step(self, action: str) -> Any:
        """A StepResult: valid, message, progress, goal_reached."""
        ...

    @property
    def progress(self) -> float: ...

    @property
    def success(self) -> bool: ...

    @property
    def done(self) -> bool: ...

    @property
    def actions(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Published:
    """A figure the paper reports for this benchmark, shown beside ours."""

    model: str
    memory: str  # as the paper names it
    arm: str  # our arm that implements it
    reward: float


@dataclass(frozen=True)
class BenchTask:
    """One task as the team plays it; made by its adapter (`adapter.task(id)`)."""

    adapter: Adapter = field(repr=False, compare=False)
    id: str
    family: str
    """The domain, level or setting: what the cross-task arm chains."""
    goal: str
    """The goal as every step's prompt states it."""
    step_limit: int
    """Its own step limit (PDDL: G-Memory's 30; BabyAI, TWC: the catalog's)."""
    oracle: tuple[str, ...]
    """An action path that solves it (the optimal plan, BabyAI's bot, the gold path)."""
    fingerprint: str
    """Its data as a short hash: a worker whose copy differs must not run it."""

    def replay(self, actions: Iterable[str]) -> Playable:
        """The environment after these actions (a fresh episode for none)."""
        return self.adapter.replay(self, actions)


class Adapter(ABC):
    """An environment as the benchmark plays it. Subclasses set the class attributes and
    the abstract methods; the prompt texts are files, never strings in code."""

    name: ClassVar[str]
    """'pddl': the command (`ima bench pddl`), the benchmark's kind, the prompt folder."""
    title: ClassVar[str]
    """For the report: 'PDDL planning'."""
    family_word: ClassVar[str]
    """What a family is called here: 'domain', 'level', 'setting'."""
    reward_note: ClassVar[str]
    """What the reward is, for the report."""
    oracle_note: ClassVar[str]
    """Whose path the oracle is, for the report."""
    published: ClassVar[tuple[Published, ...]] = ()
    """The paper's figures for this benchmark (none when it does not report it)."""

    @abstractmethod
    def families(self) -> list[str]:
        """Every family, in catalog order."""

    @abstractmethod
    def tasks(self, family: str | None = None) -> list[str]:
        """Task ids in catalog order (of one family: an unknown one is a UserError)."""

    @abstractmethod
    def task(self, task_id: str) -> BenchTask:
        """The task with this id (an unknown one is a UserError naming the closest)."""

    @abstractmethod
    def replay(self, task: BenchTask, actions: Iterable[str]) -> Playable:
        """A fresh episode of the task after these actions."""

    def task_fields(self, task: BenchTask) -> dict[str, Any]:
        """Fields of the task prompt besides `goal` and `limit`."""
        return {}

    def task_text(self, task: BenchTask, step_limit: int) -> str:
        """The task every agent reads first: the rules, the goal, how to answer."""
        return prompts.render(
            f"{self.name}/task", goal=task.goal, limit=step_limit, **self.task_fields(task)
        )

    def role(self, agent: str) -> str:
        """An agent's role (its system prompt): planner or helper."""
        return prompts.load(f"{self.name}/{agent}")

    def memory_template(self, task: BenchTask) -> str:
        """The hand-written memory template of the intrinsic-manual arm."""
        return prompts.load(f"{self.name}/memory_template")
