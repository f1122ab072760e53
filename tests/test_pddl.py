"""The PDDL benchmark's problems and text environment (ima.environments.pddl), offline and fast.

The problems are data a benchmark depends on: every stored optimal plan must be valid and
reach the goal in exactly its stored length (and first at its last step), and for the short
ones a breadth-first search confirms no shorter plan exists (benchmarks/pddl_optimal.py
recomputes all lengths with a planner installed apart). The environment is checked the way
an agent uses it: text in, text out, invalid actions change nothing and say why, the
progress rate of a scripted walk is the one computed by hand, and replaying the actions
rebuilds the same episode.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from ima.core.errors import UserError
from ima.environments.pddl import (
    PROBLEMS_DIR,
    Env,
    get_domain,
    get_problem,
    list_domains,
    list_problems,
    parse_action,
)
from ima.environments.pddl.engine import compile_problem

PROBLEMS = list_problems()


# the problem set -----------------------------------------------------------------------


def test_problem_set_has_three_domains_and_at_least_40_problems():
    counts = Counter(p.domain for p in PROBLEMS)
    assert set(counts) == {"blocksworld", "gripper", "tyreworld"}
    assert sum(counts.values()) >= 40
    assert min(counts.values()) >= 10
    assert len({p.id for p in PROBLEMS}) == len(PROBLEMS)


def test_every_problem_says_where_it_came_from_and_its_license():
    notice = (PROBLEMS_DIR / "NOTICE.md").read_text()
    for p in PROBLEMS:
        assert p.source and p.license.startswith("MIT"), p.id
        assert p.file.split("/")[-1].split("-")[0] in {"pddlgym", "ipc", "ima"}, p.id
        assert p.pddl_path.parent.name in notice
        if "pddlgym" in p.license:
            assert (PROBLEMS_DIR / "licenses/pddlgym-MIT.txt").read_text().startswith("MIT")
    assert "GPL" not in " ".join(p.license for p in PROBLEMS)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_stored_optimal_plan_reaches_the_goal_in_exactly_its_length(problem):
    env = Env(problem)
    for number, action in enumerate(problem.optimal_plan, start=1):
        result = env.step(action)
        assert result.valid, f"{problem.id} action {number}: {result.message}"
        # a shortest plan cannot pass through a goal state before its end
        assert result.goal_reached == (number == problem.optimal_length), number
    assert env.steps == problem.optimal_length
    assert env.progress == 1.0 and env.success and env.is_goal()


def _shortest_plan_length(problem, limit: int) -> int | None:
    """Breadth-first search over the environment's own states, up to `limit` actions."""
    compiled = compile_problem(problem)
    frontier = [compiled.initial_state]
    seen = {frozenset(compiled.true_facts(compiled.initial_state))}
    for depth in range(limit + 1):
        if any(all(compiled.goal_flags(s)) for s in frontier):
            return depth
        successors = []
        for state in frontier:
            for text in compiled.applicable(state):
                action, params = compiled.resolve(parse_action(text))
                nxt = compiled.apply(state, action, params)
                key = frozenset(compiled.true_facts(nxt))
                if key not in seen:
                    seen.add(key)
                    successors.append(nxt)
        frontier = successors
    return None


@pytest.mark.parametrize(
    "problem", [p for p in PROBLEMS if p.optimal_length <= 5], ids=lambda p: p.id
)
def test_no_plan_is_shorter_than_the_stored_optimal_length(problem):
    assert _shortest_plan_length(problem, problem.optimal_length) == problem.optimal_length


def test_every_goal_text_states_each_goal_literal():
    for p in PROBLEMS:
        env = Env(p)
        compiled = compile_problem(p)
        for goal in compiled.goals:
            assert compiled.phrase(goal) in p.goal, (p.id, compiled.atom(goal))
        assert len(env.goal_facts()) == len(compiled.goals) >= 1


def test_every_domain_has_rules_a_phrase_per_predicate_and_a_memory_template():
    for domain in list_domains():
        assert domain.description.strip()
        template = domain.memory_template
        assert template.startswith("# ") and template.count("\n## ") >= 4, domain.name
        model = compile_problem(list_problems(domain.name)[0]).model
        assert {f.name for f in model.fluents} <= set(domain.facts), domain.name
        for action in model.actions:  # the rules mention every action by name
            assert action.name in domain.description, (domain.name, action.name)


def test_unknown_problem_or_domain_is_a_one_line_user_error_with_the_fix():
    with pytest.raises(UserError, match=r"unknown PDDL problem 'blocksworld-1'.*blocksworld-"):
        get_problem("blocksworld-1")
    with pytest.raises(UserError, match="list_problems"):
        Env("no-such-thing")
    with pytest.raises(UserError, match="choose one of blocksworld, gripper, tyreworld"):
        get_domain("barman")
    with pytest.raises(UserError):
        list_problems("logistics")


# the environment -------------------------------------------------------------------------


def test_the_agent_sees_the_state_in_words_and_the_valid_actions():
    env = Env("blocksworld-07")  # a, b, c, d on the table; goal: d on c on b on a
    lines = env.observation().splitlines()
    assert "the hand is empty." in lines
    assert {"a is on the table.", "a is clear.", "d is clear."} <= set(lines)
    assert len(lines) == len(env.facts()) == 9
    assert env.valid_actions() == ("pick-up a", "pick-up b", "pick-up c", "pick-up d")
    assert env.goal_facts() == ("(on d c)", "(on c b)", "(on b a)")
    assert env.problem.goal == "Goal: d is on c, c is on b and b is on a."


def test_a_valid_action_changes_the_state_and_the_valid_actions():
    env = Env("blocksworld-07")
    result = env.step("pick-up b")
    assert result.valid and result.message == "pick-up b: done."
    assert "the hand is holding b." in env.observation().splitlines()
    assert "(ontable b)" not in env.facts()
    assert env.valid_actions() == ("put-down b", "stack b a", "stack b c", "stack b d")


@pytest.mark.parametrize(
    ("action", "why"),
    [
        ("stack a b", "stack a b is not possible now: it needs the hand is holding a"),
        ("unstack a b", "it needs a is on b and"),
        ("fly away", "unknown action 'fly': blocksworld has pick-up, put-down, stack, unstack"),
        ("stack a", r"stack takes 2 argument\(s\) \(block, block\), got 1"),
        ("pick-up z", "no object 'z' in problem blocksworld-07"),
        ("", "empty action"),
        ("pick-up a\nstack a b", "one action on one line"),
        ("pick up a?", "cannot read 'pick up a\\?' as an action"),
    ],
)
def test_an_invalid_action_changes_nothing_and_says_why(action, why):
    env = Env("blocksworld-07")
    env.step("pick-up b")
    env.step("stack b a")
    before = (env.facts(), env.valid_actions(), env.progress, env.goal_fraction)
    result = env.step(action)
    assert not result.valid
    assert re.search(why, result.message), result.message
    assert result.message.endswith("nothing changed") and "\n" not in result.message
    assert (env.facts(), env.valid_actions(), env.progress, env.goal_fraction) == before
    assert env.steps == 3 and env.actions[-1] == action  # it still counts as a step


def test_a_wrong_argument_type_is_named():
    result = Env("tyreworld-05").step("put-on-wheel hub1 spare1")
    assert not result.valid
    assert result.message.startswith("put-on-wheel: argument 1 must be a wheel, hub1 is a hub")


def test_action_text_is_read_in_the_forms_an_agent_writes():
    for text in ["stack a b", "(stack a b)", "Stack A B.", "  stack(a, b) ", "(STACK a  b)"]:
        assert str(parse_action(text)) == "stack a b", text
    env = Env("blocksworld-07")
    assert env.step("(Pick-Up B).").message == "pick-up b: done."
    for bad in ["", "   ", "stack a b; stack c d", "stack {a}", None]:
        with pytest.raises(UserError):
            parse_action(bad)


def test_a_wandering_walk_scores_the_progress_rate_computed_by_hand():
    # goal: (on d c), (on c b), (on b a); the progress rate is the best fraction reached
    env = Env("blocksworld-07")
    walk = [
        ("pick-up b", True, 0, 0),
        ("stack b a", True, 1, 1),  # (on b a)
        ("stack c b", False, 1, 1),  # not holding c: nothing changes
        ("pick-up c", True, 1, 1),
        ("stack c b", True, 2, 2),  # (on c b) too: 2 of 3
        ("unstack c b", True, 1, 2),  # back to 1 of 3; the best stays 2 of 3
        ("put-down c", True, 1, 2),
        ("unstack b a", True, 0, 2),
        ("fly away", False, 0, 2),
        ("put-down b", True, 0, 2),
    ]
    for action, valid, now, best in walk:
        result = env.step(action)
        assert result.valid is valid, (action, result.message)
        assert env.goal_fraction == pytest.approx(now / 3), action
        assert result.progress == env.progress == pytest.approx(best / 3), action
    assert not env.success and not env.is_goal()
    assert env.steps == 10 and sum(r.valid for r in env.history) == 8


def test_progress_counts_only_states_reached_by_actions_as_in_agentboard():
    env = Env("gripper-04")  # ball3 is already in roomb, where the robot is
    assert env.goal_fraction == pytest.approx(1 / 3) and env.progress == 0.0
    assert not env.step("pick ball1 rooma left").valid  # the robot is not in rooma
    assert env.progress == 0.0
    assert env.step("move roomb rooma").valid
    assert env.progress == pytest.approx(1 / 3)


def test_replaying_the_actions_rebuilds_the_same_episode():
    env = Env("gripper-05")
    for action in ["pick ball1 rooma left", "drop ball1 roomb left", "move rooma roomb"]:
        env.step(action)
    env.step("drop ball1 roomb left")
    env.step("pick ball2 roomb right")
    again = Env.replay("gripper-05", env.actions)
    assert again.history == env.history
    assert (again.facts(), again.observation(), again.valid_actions()) == (
        env.facts(),
        env.observation(),
        env.valid_actions(),
    )
    assert (again.progress, again.steps, again.actions) == (env.progress, env.steps, env.actions)
    # a plan checked strictly: the first invalid action is named with its position
    with pytest.raises(UserError, match=r"gripper-05: action 2 'drop ball1 roomb left'"):
        Env.replay("gripper-05", env.actions, strict=True)


def test_the_environment_prints_nothing(capfd):
    compile_problem.cache_clear()
    problem = get_problem("tyreworld-13")
    env = Env.replay(problem, problem.optimal_plan)
    env.observation()
    env.valid_actions()
    env.step("fly")
    assert capfd.readouterr() == ("", "")
