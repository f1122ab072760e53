"""A PDDL problem as a text environment: an agent reads the state and the valid actions,
answers with one action, and is scored by the progress rate.

    env = Env("blocksworld-03")
    env.observation()          # the state in words, one fact per line
    env.valid_actions()        # ('pick-up a', 'unstack c b', ...)
    result = env.step("unstack c b")
    result.valid, result.message, env.progress, env.success

Deterministic and rebuilt from its actions: `Env.replay(problem, env.actions)` is the same
environment, so a checkpointed graph only needs to keep the list of actions. Invalid
actions (unreadable, unknown, or not applicable now) change nothing, say why in
`StepResult.message`, and are kept in `actions` like any other step.

The progress rate follows AgentBoard (Ma et al., 2024): the best fraction of goal literals
satisfied in any state an applied action led to; 0.0 before the first applied action, so
an agent that does nothing scores 0 even when the initial state satisfies some literals
(`goal_fraction` is the current state's fraction, the initial state included). Success is
all goal literals at once: `progress == 1.0`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from unified_planning.model import State

from ima.core.errors import UserError
from ima.environments.pddl.actions import format_action, parse_action
from ima.environments.pddl.catalog import Problem, get_problem
from ima.environments.pddl.engine import Compiled, compile_problem


@dataclass(frozen=True)
class StepResult:
    """What one step did."""

    action: str
    """The action text as given."""
    valid: bool
    """Whether it was applied (an invalid one changed nothing)."""
    message: str
    """One line for the agent: what happened, or why the action was not possible."""
    progress: float
    """The progress rate after this step."""
    goal_reached: bool
    """Whether the current state satisfies the whole goal."""


class Env:
    """One episode of a bundled PDDL problem (give the `Problem` or its id)."""

    def __init__(self, problem: Problem | str) -> None:
        self._problem = get_problem(problem) if isinstance(problem, str) else problem
        self._compiled: Compiled = compile_problem(self._problem)
        if not self._compiled.goals:
            raise UserError(f"PDDL problem {self._problem.id} has an empty goal: give it one")
        self._state: State = self._compiled.initial_state
        self._valid_actions: tuple[str, ...] | None = None
        self._history: list[StepResult] = []
        self._progress = 0.0

    @classmethod
    def replay(cls, problem: Problem | str, actions: Iterable[str], *, strict: bool = False) -> Env:
        """The environment after these actions, exactly as when they were first taken.

        With `strict`, an invalid action is a UserError that names it and its position
        (for checking a plan); otherwise it is replayed as the no-op it was.
        """
        env = cls(problem)
        for number, action in enumerate(actions, start=1):
            result = env.step(action)
            if strict and not result.valid:
                raise UserError(
                    f"{env.problem.id}: action {number} {action!r} is invalid: {result.message}"
                )
        return env

    # what the agent sees ---------------------------------------------------------------

    @property
    def problem(self) -> Problem:
        """The problem being played (goal text, optimal length, domain)."""
        return self._problem

    def observation(self) -> str:
        """The current state in words: every true fact, one per line."""
        return "\n".join(
            self._compiled.phrase(f) + "." for f in self._compiled.true_facts(self._state)
        )

    def facts(self) -> tuple[str, ...]:
        """The current state as PDDL atoms, '(on a b)', in a fixed order."""
        return tuple(self._compiled.atom(f) for f in self._compiled.true_facts(self._state))

    def goal_facts(self) -> tuple[str, ...]:
        """The goal literals as PDDL atoms."""
        return tuple(self._compiled.atom(g) for g in self._compiled.goals)

    def valid_actions(self) -> tuple[str, ...]:
        """The actions applicable now, as canonical text ('stack a b'), in the domain's
        action order, then by arguments."""
        if self._valid_actions is None:
            self._valid_actions = tuple(self._compiled.applicable(self._state))
        return self._valid_actions

    # acting ------------------------------------------------------------------------------

    def step(self, action: str) -> StepResult:
        """Apply one action given as text; never raises for what an agent may write."""
        compiled = self._compiled
        try:
            call = parse_action(action)
            ground, params = compiled.resolve(call)
        except UserError as exc:
            return self._record(action, False, f"{exc}; nothing changed")
        text = format_action(call.name, call.args)
        if not compiled.is_applicable(self._state, ground, params):
            unmet = compiled.unmet(self._state, ground, params)
            needs = f": it needs {' and '.join(unmet)}" if unmet else ""
            return self._record(
                action, False, f"{text} is not possible now{needs}; nothing changed"
            )
        self._state = compiled.apply(self._state, ground, params)
        self._valid_actions = None
        self._progress = max(self._progress, self.goal_fraction)
        done = " The goal is reached." if self.is_goal() else ""
        return self._record(action, True, f"{text}: done.{done}")

    def _record(self, action: str, valid: bool, message: str) -> StepResult:
        result = StepResult(
            action=action if isinstance(action, str) else repr(action),
            valid=valid,
            message=message,
            progress=self._progress,
            goal_reached=self.is_goal(),
        )
        self._history.append(result)
        return result

    # scores and history --------------------------------------------------------------

    def is_goal(self) -> bool:
        """Whether the current state satisfies every goal literal."""
        return all(self._compiled.goal_flags(self._state))

    @property
    def goal_fraction(self) -> float:
        """The fraction of goal literals true in the current state."""
        flags = self._compiled.goal_flags(self._state)
        return sum(flags) / len(flags)

    @property
    def progress(self) -> float:
        """The progress rate: the best `goal_fraction` over the states actions led to."""
        return self._progress

    @property
    def success(self) -> bool:
        """Whether the goal was reached at some step."""
        return self._progress == 1.0

    @property
    def done(self) -> bool:
        """Whether the episode is over: only the goal ends it (a step limit is the player's)."""
        return self.is_goal()

    @property
    def actions(self) -> tuple[str, ...]:
        """Every action text given to `step`, valid or not, in order (what `replay` needs)."""
        return tuple(r.action for r in self._history)

    @property
    def history(self) -> tuple[StepResult, ...]:
        """The result of every step, in order."""
        return tuple(self._history)

    @property
    def steps(self) -> int:
        """Steps taken, invalid ones included (what a step limit counts)."""
        return len(self._history)
