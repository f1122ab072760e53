"""The environments' adapters (ima.planning.adapters) and the planning team on each of them.

Every adapter keeps one contract: tasks by id and family in catalog order, the oracle path
solving every task within its step limit when replayed, a seeded random policy giving the
same episode twice and the same episode again from its actions, prompt texts that are
files with every field filled, bad ids refused in one line. The team (a real LangGraph
graph) solves a task in every environment when its model follows the oracle, and plays to
the limit with the scripted model, whatever the arm. TWC runs on Java (one JVM).
"""

from __future__ import annotations

import random
import re

import pytest
from intrinsic_memory import MemoryTemplate

from ima.core.errors import UserError
from ima.evals.bench.oracle import oracle_rows
from ima.models.scripted import ScriptedChatModel
from ima.planning import (
    ADAPTERS,
    Arm,
    SolverSettings,
    build_solver,
    episode_outcome,
    get_adapter,
    recursion_limit,
    task_text,
)

# one task per environment with a short oracle path (the team tests play them)
SAMPLE = {"pddl": "gripper-01", "babyai": "babyai-pickuploc-s0", "twc": "twc-rooms1-items2-s20000"}


@pytest.fixture(scope="module", autouse=True)
def no_java_left_behind():
    yield
    from ima.environments import jvm

    jvm.shutdown()
    assert jvm.running() == {}


@pytest.mark.parametrize("env", ADAPTERS)
def test_every_task_is_solved_by_its_oracle_within_its_step_limit(env):
    adapter = get_adapter(env)
    tasks = adapter.tasks()
    assert tasks == [t for family in adapter.families() for t in adapter.tasks(family)]
    if env == "pddl":  # tests/test_pddl.py checks every stored plan (15 s): a spread here
        tasks = tasks[::5]
    rows = oracle_rows(env, tasks, SolverSettings(step_limit=None))
    assert all(r["success"] and r["reward"] == 1.0 for r in rows), [
        r["task"] for r in rows if not r["success"]
    ]
    assert all(r["steps"] == r["oracle_length"] <= r["step_limit"] for r in rows)


def test_a_step_limit_shorter_than_the_path_leaves_the_oracle_short():
    (row,) = oracle_rows("pddl", ["blocksworld-23"], SolverSettings(step_limit=5))
    assert (row["success"], row["steps"], row["oracle_length"]) == (False, 5, 19)
    assert 0.0 <= row["reward"] < 1.0


def _random_policy(env: str, seed: int) -> tuple[list[str], list[tuple]]:
    """A seeded random policy over the valid actions (and now and then nonsense) to the
    task's step limit: its actions and what it saw."""
    task = get_adapter(env).task(SAMPLE[env])
    rng = random.Random(seed)
    played = task.replay([])
    seen = []
    for _ in range(task.step_limit):
        valid = played.valid_actions()
        action = rng.choice(valid) if valid and rng.random() < 0.85 else "dance a jig"
        result = played.step(action)
        seen.append((played.observation(), result.valid, result.message, result.progress))
        if played.done:
            break
    return list(played.actions), seen


@pytest.mark.parametrize("env", ADAPTERS)
def test_a_seeded_random_policy_plays_the_same_episode_and_replays_it(env):
    actions, seen = _random_policy(env, seed=3)
    assert (actions, seen) == _random_policy(env, seed=3)
    assert any(not valid for _, valid, _, _ in seen)  # the nonsense was refused, and said why
    assert all(message for _, _, message, _ in seen)
    again = get_adapter(env).task(SAMPLE[env]).replay(actions)
    assert again.observation() == seen[-1][0] and again.progress == seen[-1][3]


@pytest.mark.parametrize("env", ADAPTERS)
def test_the_prompts_are_files_with_every_field_filled(env):
    adapter = get_adapter(env)
    task = adapter.task(SAMPLE[env])
    text = task_text(task, SolverSettings(step_limit=None))
    assert task.goal in text and f"You have {task.step_limit} steps" in text
    assert "check valid actions" in text and not re.search(r"\{\w+\}", text)
    for agent in ("planner", "helper"):
        assert adapter.role(agent).startswith(f"You are the {agent}")
    template = MemoryTemplate.of(adapter.memory_template(task), kind="manual")
    assert len(template.markdown().splitlines()) > 4


@pytest.mark.parametrize(
    ("env", "call", "message"),
    [
        ("pddl", lambda a: a.task("blocksworld-1"), "unknown PDDL problem 'blocksworld-1'"),
        ("pddl", lambda a: a.tasks("barman"), "unknown PDDL domain 'barman'"),
        ("babyai", lambda a: a.task("babyai-gotolocal-s9"), "did you mean"),
        ("babyai", lambda a: a.task("twc-rooms1-items1-s20000"), "is a twc task, not BabyAI"),
        ("babyai", lambda a: a.tasks("GoToMoon"), "unknown BabyAI level 'GoToMoon'"),
        ("twc", lambda a: a.tasks("rooms9"), "unknown TextWorld Commonsense setting 'rooms9'"),
    ],
)
def test_bad_ids_are_one_line_user_errors(env, call, message):
    with pytest.raises(UserError, match=re.escape(message)) as caught:
        call(get_adapter(env))
    assert "\n" not in str(caught.value)


def test_a_family_is_found_whatever_its_case():
    assert get_adapter("babyai").tasks("gotolocal") == [
        "babyai-gotolocal-s0",
        "babyai-gotolocal-s1",
        "babyai-gotolocal-s2",
    ]


class OracleFollower(ScriptedChatModel):
    """Answers step N with the oracle's N-th action, as a chatty model writes it."""

    path: tuple[str, ...] = ()

    def _action(self, prompt: str) -> str:
        step = int(re.findall(r"^# Step (\d+) of \d+", prompt, re.M)[-1])
        return f"Action: `{self.path[step - 1]}`\nThat is the way."


def _play(env: str, arm: str, model, settings: SolverSettings) -> tuple:
    task = get_adapter(env).task(SAMPLE[env])
    graph = build_solver(task, Arm(arm), model, settings).compile()
    limit = settings.limit_for(task.step_limit)
    state = graph.invoke({}, {"recursion_limit": recursion_limit(settings, limit)})
    return task, state, episode_outcome(task, state)


@pytest.mark.parametrize("arm", ["none", "intrinsic-manual"])
@pytest.mark.parametrize("env", ADAPTERS)
def test_the_team_solves_every_environment_when_its_model_follows_the_oracle(env, arm):
    task = get_adapter(env).task(SAMPLE[env])
    model = OracleFollower(path=task.oracle)
    task, state, outcome = _play(env, arm, model, SolverSettings(step_limit=None))
    assert (outcome.success, outcome.reward) == (True, 1.0)
    assert [s["action"] for s in state["steps"]] == list(task.oracle)
    assert state["steps"][-1]["goal_reached"] and outcome.steps == len(task.oracle)
    if arm == "intrinsic-manual":  # the environment's own template shapes the memory
        assert state["intrinsic_memory"]["planner"]["version"] == len(task.oracle)


@pytest.mark.parametrize("env", ADAPTERS)
def test_the_scripted_model_plays_every_environment_to_its_limit_or_the_end(env):
    model = ScriptedChatModel(seed=1, temperature=0.7)
    task, state, outcome = _play(env, "summary", model, SolverSettings(step_limit=None))
    steps = state["steps"]
    assert steps[0]["action"] == "check valid actions"
    assert steps[0]["observation"].startswith("Valid actions now: ")
    assert outcome.success or steps[-1].get("done") or len(steps) == task.step_limit
    assert 0.0 <= outcome.reward <= 1.0 and outcome.valid_steps >= len(steps) // 2
    if len(steps) > 10:  # the summary arm summarised every 10 steps
        assert state["usage"]["summarizer"]["summary"]["calls"] >= 1
