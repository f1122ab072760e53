"""BabyAI as text (ima.environments.babyai): what the agent is told matches minigrid's grid,
`valid_actions()` lists exactly the actions that change the world, and BabyAI's own step
accounting and reward are kept (a bump costs a minigrid step, unreadable text does not)."""

from __future__ import annotations

import random
import re
from copy import deepcopy

import numpy as np
import pytest

from ima.core.errors import UserError
from ima.environments import list_tasks
from ima.environments.babyai import ACTIONS, LEVELS, BabyAIEnv, bot_path, make_level

TASKS = list_tasks("babyai")
PLACE = re.compile(
    r"^- an? (?P<name>.+?) (?:(?P<f>\d+) steps? forward)?(?: and )?(?:(?P<s>\d+) steps? "
    r"(?P<side>left|right))?$"
)


def world(env: BabyAIEnv) -> tuple:
    """Everything an action can change: the agent's cell and heading, what it carries, the
    grid (objects, door states)."""
    inner = env._env
    carried = inner.carrying.encode() if inner.carrying else None
    return tuple(inner.agent_pos), inner.agent_dir, carried, inner.grid.encode().tobytes()


def walk(task, seed: int, steps: int = 60):
    """A random walk over all six actions, valid or not, yielding the env before each."""
    rng = random.Random(seed)
    env = BabyAIEnv(task)
    for _ in range(steps):
        if env.done:
            return
        yield env
        env.step(rng.choice(ACTIONS))


def test_the_levels_climb_the_ladder_and_the_bot_paths_are_the_stored_oracles():
    assert [t.family for t in TASKS[::3]] == list(LEVELS)
    for task in TASKS[::5]:
        assert bot_path(task.family, task.seed) == task.oracle
        assert make_level(task.family, task.seed).mission == task.goal


@pytest.mark.slow  # a copy of the world per action tried: seconds on the 22x22 levels
@pytest.mark.parametrize("task", TASKS[::3], ids=lambda t: t.id)  # one task per level
def test_valid_actions_are_exactly_the_actions_that_change_the_world(task):
    checked = 0
    for env in walk(task, seed=task.seed, steps=40):
        valid = env.valid_actions()
        for action in ACTIONS:  # each action tried on a replayed copy
            copy = deepcopy(env)
            before = world(copy)
            result = copy.step(action)
            changed = world(copy) != before
            assert (action in valid) == changed or result.goal_reached, (action, env.actions)
            assert result.valid == (changed or copy.done), (action, result.message)
            checked += 1
    assert checked >= 30


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_every_object_described_is_where_the_description_puts_it(task):
    for env in walk(task, seed=3, steps=25):
        inner = env._env
        lines = env.observation().splitlines()
        carried = inner.carrying
        assert lines[0] == (
            f"You carry a {carried.color} {carried.type}." if carried else "You carry nothing."
        )
        front = inner.grid.get(*inner.front_pos)
        assert lines[1].startswith("In front of you: ")
        assert (front is None) == (lines[1] == "In front of you: nothing.")
        for line in lines[3:]:
            match = PLACE.match(line)
            assert match, line
            forward, side = int(match["f"] or 0), int(match["s"] or 0)
            right = -side if match["side"] == "left" else side
            cell = np.array(inner.agent_pos) + forward * inner.dir_vec + right * inner.right_vec
            obj = inner.grid.get(*cell)
            assert obj is not None, line
            name = match["name"]
            assert name == "wall" if obj.type == "wall" else name.endswith(obj.type), line
            if obj.type != "wall":
                assert obj.color in name, line


def test_a_view_is_described_in_a_fixed_order_relative_to_the_agent():
    env = BabyAIEnv("babyai-gotolocal-s1")
    assert env.observation() == "\n".join(
        [
            "You carry nothing.",
            "In front of you: nothing.",
            "You see:",
            "- a grey box 2 steps left",
            "- a purple box 1 step forward and 1 step left",
            "- a wall 3 steps left",
            "- a red key 1 step forward and 2 steps left",
            "- a green key 2 steps forward and 2 steps right",
            "- a wall 4 steps forward",
            "- a grey key 2 steps forward and 3 steps right",
        ]
    )


def test_doors_keys_and_what_the_agent_carries_are_described_with_their_state():
    task = next(t for t in TASKS if t.id == "babyai-keycorridors3r1-s0")
    env = BabyAIEnv(task)
    assert "- a locked yellow door 1 step left" in env.observation()
    messages = [env.step(a).message for a in task.oracle]
    assert "You open the blue door." in messages
    assert "You pick up the yellow key." in messages
    assert "You unlock and open the yellow door." in messages
    assert messages[-1] == "You pick up the purple ball. The mission is accomplished."
    assert env.observation().startswith("You carry a purple ball.")


def test_a_bump_costs_a_minigrid_step_but_unreadable_text_does_not():
    task = next(t for t in TASKS if t.id == "babyai-keycorridors3r1-s0")
    env = BabyAIEnv(task)  # it starts facing a wall
    view, steps = env.observation(), env._env.step_count
    bump = env.step("go forward")
    assert not bump.valid and bump.message == (
        "You cannot go forward: a wall is in the way. Nothing changed."
    )
    assert env.observation() == view and env._env.step_count == steps + 1
    nonsense = env.step("jump")
    assert not nonsense.valid and env._env.step_count == steps + 1
    for action in task.oracle:
        env.step(action)
    # minigrid's reward counts the bump, not the unreadable answer
    expected = 1 - 0.9 * (task.oracle_length + 1) / env.max_steps
    assert env.success and env.babyai_reward == pytest.approx(expected)
    assert env.steps == task.oracle_length + 2


def test_invalid_physical_actions_say_why():
    env = BabyAIEnv("babyai-keycorridors3r1-s0")
    assert env.step("pick up").message == (
        "You cannot pick up: a wall cannot be picked up. Nothing changed."
    )
    assert (
        env.step("drop").message == "You cannot drop: you carry nothing to drop. Nothing changed."
    )
    assert env.step("toggle").message == (
        "You cannot toggle: a wall cannot be toggled (doors and boxes can). Nothing changed."
    )
    env.step("turn left")  # facing the locked yellow door
    assert env.step("toggle").message == (
        "You cannot toggle: the yellow door is locked: it opens with the yellow key. "
        "Nothing changed."
    )
    assert env.valid_actions() == ("turn left", "turn right")
    assert env.progress == 0.0 and env.babyai_reward == 0.0


def test_actions_are_read_ignoring_case_spacing_and_a_few_aliases():
    task = TASKS[0]
    plain = BabyAIEnv.replay(task, task.oracle)
    loose = [f"  {a.upper()}. " for a in task.oracle]
    assert BabyAIEnv.replay(task, loose).observation() == plain.observation()
    env = BabyAIEnv(task)
    assert env.step("forward").valid and env.step("Left").valid
    assert env.actions == ("forward", "Left")


def test_an_unknown_level_is_a_user_error():
    with pytest.raises(UserError, match="unknown BabyAI level 'GoToMoon'"):
        make_level("GoToMoon", 0)
