"""The offline text environments (ima.environments): the bundled tasks and the contract every
environment keeps, checked on every bundled task of BabyAI and TextWorld Commonsense.

The contract is the PDDL environment's: text in, text out; the oracle path solves the task
within its step limit; a random agent plays to the limit without an error; an invalid action
says why and changes nothing; replaying the actions rebuilds the same episode; the same
actions always give the same observations. The TWC tests run on Java (one JVM per process).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from ima.core.errors import UserError
from ima.environments import (
    ENVIRONMENTS,
    EnvTask,
    TextEnvironment,
    environment_class,
    get_task,
    list_tasks,
    make,
    replay,
    step_limit_for,
)
from ima.environments.catalog import tasks_path

TASKS = list_tasks()


@pytest.fixture(scope="module", autouse=True)
def no_java_left_behind():
    """The TWC games' JVM stops when asked (and at exit): none outlives this module."""
    yield
    from ima.environments import jvm

    pids = list(jvm.running().values())
    jvm.shutdown()
    assert jvm.running() == {} and not any(java_alive(pid) for pid in pids)


def java_alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


GARBAGE = ("", "   ", "dance a jig", "go forward go forward", "take the moon", "42", "\n")


def state(env: TextEnvironment) -> tuple:
    return env.observation(), env.valid_actions(), env.progress, env.success, env.done


def random_episode(task: EnvTask, seed: int) -> TextEnvironment:
    """A seeded random agent to the step limit: mostly valid actions, some garbage."""
    rng = random.Random(seed)
    env = make(task)
    for _ in range(task.step_limit):
        valid = env.valid_actions()
        action = rng.choice(valid) if valid and rng.random() < 0.8 else rng.choice(GARBAGE)
        result = env.step(action)
        assert isinstance(result.message, str) and result.message
        assert 0.0 <= result.progress <= 1.0
    return env


# the task set ---------------------------------------------------------------------------


def test_both_environments_bundle_tasks_over_several_families_and_seeds():
    counts = Counter(t.environment for t in TASKS)
    assert set(counts) == set(ENVIRONMENTS) == {"babyai", "twc"}
    assert counts["babyai"] >= 18 and counts["twc"] >= 12
    for environment in ENVIRONMENTS:
        families = Counter(t.family for t in list_tasks(environment))
        assert len(families) >= 5 and min(families.values()) >= 3, environment
    assert len({t.id for t in TASKS}) == len(TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_every_step_limit_is_the_documented_function_of_the_oracle_length(task):
    assert task.step_limit == step_limit_for(task.oracle_length)
    assert task.step_limit >= 2 * task.oracle_length and task.step_limit >= task.oracle_length + 10
    assert task.id.startswith(task.environment + "-") and str(task.seed) in task.id


def test_step_limit_for_is_twice_the_path_with_ten_answers_to_spare():
    assert [step_limit_for(n) for n in (1, 5, 10, 11, 56)] == [11, 15, 20, 22, 112]


def test_an_unknown_task_or_environment_is_a_user_error_naming_the_fix():
    with pytest.raises(UserError, match=r"did you mean babyai-gotolocal-s.*babyai-gotolocal-s1"):
        get_task("babyai-gotolocal-s9")
    with pytest.raises(UserError, match="list_tasks"):
        get_task("alfworld-1")
    with pytest.raises(UserError, match="choose one of babyai, twc"):
        list_tasks("alfworld")
    with pytest.raises(UserError, match="choose one of babyai, twc"):
        environment_class("alfworld")


def test_a_hand_edited_step_limit_is_refused(tmp_path, monkeypatch):
    from ima.environments import catalog

    text = tasks_path("twc").read_text().replace("step_limit: 13", "step_limit: 14", 1)
    (tmp_path / "twc.yaml").write_text(text)
    (tmp_path / "babyai.yaml").write_text(tasks_path("babyai").read_text())
    monkeypatch.setattr(catalog, "TASKS_DIR", tmp_path)
    catalog._tasks.cache_clear()
    try:
        with pytest.raises(UserError, match=r"is not step_limit_for.*regenerate"):
            catalog.list_tasks()
    finally:
        monkeypatch.undo()
        catalog._tasks.cache_clear()


def test_a_task_of_one_environment_is_refused_by_the_other():
    babyai, twc = list_tasks("babyai")[0], list_tasks("twc")[0]
    with pytest.raises(UserError, match="not TWC"):
        environment_class("twc")(babyai)
    with pytest.raises(UserError, match="not BabyAI"):
        environment_class("babyai")(twc)


# the contract, on every bundled task ----------------------------------------------------


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_the_oracle_solves_the_task_at_its_last_action_within_the_limit(task):
    env = make(task)
    assert isinstance(env, TextEnvironment) and env.task == task
    assert env.progress == 0.0 and not env.success and not env.done
    for number, action in enumerate(task.oracle, start=1):
        assert action in env.valid_actions(), (number, action, env.valid_actions())
        result = env.step(action)
        assert result.valid, (number, action, result.message)
        assert result.goal_reached == (number == task.oracle_length), (number, action)
    assert env.success and env.done and env.progress == 1.0
    assert len(env.actions) == task.oracle_length <= task.step_limit
    assert env.valid_actions() == ()
    after = env.step(task.oracle[-1])
    assert not after.valid and "nothing changed" in after.message and after.goal_reached


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_a_random_agent_plays_to_the_limit_and_replay_rebuilds_the_episode(task):
    env = random_episode(task, seed=len(task.id))
    assert len(env.actions) == task.step_limit
    again = replay(task, env.actions)
    assert state(again) == state(env)
    assert [r.message for r in again.history] == [r.message for r in env.history]
    assert type(again).replay(task, env.actions).observation() == env.observation()


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_an_invalid_action_says_why_and_changes_nothing(task):
    env = make(task)
    env.step(task.oracle[0])  # somewhere past the start
    before = state(env)
    for garbage in GARBAGE:
        result = env.step(garbage)
        assert not result.valid and not result.goal_reached
        assert "nothing changed" in result.message.lower(), result.message
        assert state(env) == before
    assert env.actions[1:] == GARBAGE
    assert replay(task, env.actions).step(task.oracle[1]).valid  # the path goes on as before


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_observations_are_the_same_for_the_same_task_and_actions(environment):
    for task in list_tasks(environment)[::4]:
        first = random_episode(task, seed=7)
        second = random_episode(task, seed=7)
        assert [r.message for r in first.history] == [r.message for r in second.history]
        assert state(first) == state(second)
        assert make(task).observation() == make(task).observation()


def test_non_text_actions_are_invalid_not_errors():
    for task in (list_tasks("babyai")[0], list_tasks("twc")[0]):
        env = make(task.id)
        for odd in (None, 3, ["go forward"]):
            result = env.step(odd)  # type: ignore[arg-type]
            assert not result.valid and result.action == repr(odd)
        assert env.progress == 0.0
