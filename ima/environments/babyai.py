"""BabyAI as a text environment, offline: levels come from a level name and a seed.

The paper (Yuen et al., 2025) reports PDDL, FEVER and ALFWorld; its authors' newer public
code also sweeps BabyAI, which needs no download: `minigrid` 3.2.0 generates every level
from its name and a seed, and its bundled bot (`BabyAIBot`) solves them. This is that
benchmark as text, the way LLM agent benchmarks play it (BabyAI-Text, BALROG): the mission,
what the agent sees and where relative to it, what it carries; actions are words.

    env = BabyAIEnv("babyai-gotolocal-s1")
    env.task.goal            # 'go to the purple box'
    env.observation()        # 'You carry nothing.\\nIn front of you: nothing.\\nYou see: ...'
    env.valid_actions()      # ('turn left', 'turn right', 'go forward')
    result = env.step("go forward")
    env.progress, env.success, env.babyai_reward

Actions: 'turn left', 'turn right', 'go forward', 'pick up', 'drop', 'toggle' (opens,
closes or unlocks the door in front, opens a box). BabyAI's `done` action is left out: its
verifier only uses it under a debugging flag, so it would be a step that does nothing.

Invalid actions. Text that is not one of the actions never reaches minigrid: nothing changes,
not even minigrid's step counter. An action minigrid accepts but that does nothing now
(walking into a wall or a closed door, picking up with nothing in front or full hands,
dropping onto an object, toggling a wall, ball or key, or a locked door without its key)
is passed to minigrid exactly as BabyAI does: the world stays as it was, but minigrid counts
the step (it lowers BabyAI's own reward) and its verifier sees the action. Either way the
result is invalid, says why, and counts towards the task's step limit, which counts every
answer. `valid_actions()` lists the actions that would do something now.

Scores: `progress` is 1.0 once the mission is accomplished, else 0.0 (BabyAI has no partial
credit); `babyai_reward` is minigrid's own reward, 1 - 0.9 * (minigrid steps / its
`max_steps`) on success, else 0. The episode ends when the mission succeeds or fails (some
instructions fail, e.g. opening the wrong door in strict levels); after that every step is
invalid. minigrid's own step budget (`max_steps`) is larger than every bundled step limit;
the task's limit is the one that counts.
"""

from __future__ import annotations

import contextlib
import io

import gymnasium
import minigrid  # noqa: F401  (importing it registers the BabyAI levels with gymnasium)
from minigrid.core.world_object import Key
from minigrid.minigrid_env import MiniGridEnv

from ima.core.errors import UserError
from ima.environments.babyai_view import describe, name_of, with_article
from ima.environments.base import EnvTask, StepResult, TextEnvironment, same_action
from ima.environments.catalog import task_of

# The bundled levels, easy to hard: navigation, picking up, doors, putting next to, keys,
# then a composite instruction; each at SEEDS. All are solved by minigrid's bot.
LEVELS = (
    "GoToRedBall",
    "GoToLocal",
    "PickupLoc",
    "OpenDoorLoc",
    "PutNextLocal",
    "UnlockLocal",
    "KeyCorridorS3R1",
    "SynthLoc",
)
SEEDS = (0, 1, 2)

# The text of minigrid's actions 0-5, in its order (left, right, forward, pickup, drop, toggle).
ACTIONS = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle")
_ALIASES = {"left": 0, "right": 1, "forward": 2, "move forward": 2, "pickup": 3}
_INDEX = {text: index for index, text in enumerate(ACTIONS)} | _ALIASES


def make_level(level: str, seed: int) -> MiniGridEnv:
    """A BabyAI level generated from its name and seed, reset and ready (no wrappers)."""
    try:
        env = gymnasium.make(f"BabyAI-{level}-v0").unwrapped
    except gymnasium.error.Error:
        raise UserError(
            f"unknown BabyAI level {level!r}: use a minigrid level name such as GoToLocal"
        ) from None
    # Level generation prints its rejected samples, which are not the caller's business
    # (redirect_stdout is process-wide for these few milliseconds).
    with contextlib.redirect_stdout(io.StringIO()):
        env.reset(seed=seed)
    return env  # type: ignore[return-value]


def bot_path(level: str, seed: int, max_actions: int = 1000) -> tuple[str, ...]:
    """The actions minigrid's bot takes to solve a level, as text; a UserError if it fails."""
    from minigrid.utils.baby_ai_bot import BabyAIBot

    env = make_level(level, seed)
    bot = BabyAIBot(env)
    path: list[str] = []
    for _ in range(max_actions):
        action = int(bot.replan())
        if action >= len(ACTIONS):
            break  # the bot says 'done' without having succeeded
        path.append(ACTIONS[action])
        _, reward, terminated, _, _ = env.step(action)
        if terminated:
            if reward > 0:
                return tuple(path)
            break
    raise UserError(f"BabyAI's bot does not solve {level} seed {seed}: choose another")


def _why_not(env: MiniGridEnv, action: int) -> str | None:
    """Why an action would do nothing now (None: it does something), by minigrid's rules."""
    front = env.grid.get(*env.front_pos)
    carried = env.carrying
    thing = with_article(name_of(front)) if front else ""
    if action == 2 and front is not None and not front.can_overlap():
        return f"{thing} is in the way"
    if action == 3:
        if carried is not None:
            return f"you already carry {with_article(name_of(carried))}; drop it first"
        if front is None:
            return "there is nothing in front of you to pick up"
        if not front.can_pickup():
            return f"{thing} cannot be picked up"
    if action == 4:
        if carried is None:
            return "you carry nothing to drop"
        if front is not None:
            return f"{thing} in front of you leaves no room to drop it"
    if action == 5:
        if front is None:
            return "there is nothing in front of you to toggle"
        if front.type == "door" and front.is_locked:
            if not (isinstance(carried, Key) and carried.color == front.color):
                return f"the {front.color} door is locked: it opens with the {front.color} key"
        elif front.type not in ("door", "box"):
            return f"{thing} cannot be toggled (doors and boxes can)"
    return None


def _did(env: MiniGridEnv, action: int, before: str, carried_before: str) -> str:
    """What a valid action did, in words."""
    if action in (0, 1):
        return f"You turn {'left' if action == 0 else 'right'}."
    if action == 2:
        return "You go forward."
    if action == 3:
        return f"You pick up the {name_of(env.carrying)}."
    if action == 4:
        return f"You drop the {carried_before}."
    front = env.grid.get(*env.front_pos)
    if before.endswith(" box"):
        inside = f"; it held {with_article(name_of(front))}" if front else "; it was empty"
        return f"You open the {before}{inside}."
    if before.startswith("locked"):
        return f"You unlock and open the {front.color} door."
    return f"You {'open' if front.is_open else 'close'} the {front.color} door."


class BabyAIEnv(TextEnvironment):
    """One episode of a bundled BabyAI task (give the `EnvTask` or its id)."""

    def __init__(self, task: EnvTask | str) -> None:
        super().__init__()
        self._task = task_of(task, "babyai", "BabyAI")
        self._env = make_level(self._task.family, self._task.seed)
        if self._env.mission != self._task.goal:
            raise UserError(
                f"{self._task.id}: minigrid generated the mission {self._env.mission!r}, the "
                f"catalog says {self._task.goal!r}: install minigrid==3.2.0"
            )
        self._success = False
        self._failed = False
        self._reward = 0.0
        self._view: str | None = None

    # what the agent sees ---------------------------------------------------------------

    @property
    def task(self) -> EnvTask:
        return self._task

    def observation(self) -> str:
        """What the agent carries and sees now, one fact per line."""
        if self._view is None:
            self._view = describe(self._env)
        return self._view

    def valid_actions(self) -> tuple[str, ...]:
        """The actions that would do something now, in minigrid's order (none when over)."""
        if self.done:
            return ()
        return tuple(text for i, text in enumerate(ACTIONS) if _why_not(self._env, i) is None)

    # acting ------------------------------------------------------------------------------

    def step(self, action: str) -> StepResult:
        """Take one action given as text; never raises for what an agent may write."""
        text = action if isinstance(action, str) else repr(action)
        index = _INDEX.get(same_action(action))
        if index is None:
            return self._record(
                text,
                False,
                f"{text!r} is not an action here: answer one of {', '.join(ACTIONS)}. "
                "Nothing changed.",
            )
        if self.done:
            over = "accomplished" if self._success else "failed"
            return self._record(text, False, f"The mission is {over}; nothing changed.")
        reason = _why_not(self._env, index)
        front = self._env.grid.get(*self._env.front_pos)
        before = name_of(front) if front else ""
        carried = name_of(self._env.carrying) if self._env.carrying else ""
        _, reward, terminated, _, _ = self._env.step(index)
        self._view = None
        if terminated:
            self._success, self._failed = reward > 0, reward <= 0
            self._reward = float(reward)
        if reason is None:
            message = _did(self._env, index, before, carried)
        else:
            message = f"You cannot {ACTIONS[index]}: {reason}. Nothing changed."
        if self._success:
            message += " The mission is accomplished."
        elif self._failed:
            message += " The mission has failed."
        return self._record(text, reason is None or terminated, message)

    # scores and history --------------------------------------------------------------

    @property
    def progress(self) -> float:
        """1.0 once the mission is accomplished, else 0.0."""
        return 1.0 if self._success else 0.0

    @property
    def success(self) -> bool:
        return self._success

    @property
    def done(self) -> bool:
        """Whether the mission is accomplished or has failed."""
        return self._success or self._failed

    @property
    def babyai_reward(self) -> float:
        """minigrid's reward: 1 - 0.9 * (its steps / its max_steps) on success, else 0."""
        return self._reward

    @property
    def max_steps(self) -> int:
        """minigrid's own step budget for this level (what its reward is relative to)."""
        return self._env.max_steps
