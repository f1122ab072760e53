"""The planning team (ima.planning) on scripted models: the graph, not the model, is tested.

A scripted solver that replays a problem's optimal plan must solve it in every memory arm
with every call accounted; a scripted wanderer (invalid actions, a check of the valid
actions, a repetition that calls the helper) must score exactly the progress rate computed
by hand, whatever the arm; and each arm must show its agents what it promises.
"""

from __future__ import annotations

import re

import pytest
from pydantic import Field

from ima.environments.pddl import get_problem
from ima.models.scripted import ScriptedChatModel
from ima.planning import (
    ARMS,
    CHECK,
    Arm,
    SolverSettings,
    build_solver,
    episode_outcome,
    read_action,
    recursion_limit,
)

_STEP = re.compile(r"^# Step (\d+) of \d+", re.M)


class PlanReplayer(ScriptedChatModel):
    """Answers step N with the plan's N-th action (written as a chatty model would)."""

    plan: tuple[str, ...] = ()

    def _action(self, prompt: str) -> str:
        step = int(_STEP.findall(prompt)[-1])
        return f"Action: `{self.plan[step - 1]}`\nThis moves towards the goal."


class Wanderer(ScriptedChatModel):
    """The planner answers step N with script[N]; the helper with `helper_answer`."""

    script: dict[int, str] = Field(default_factory=dict)
    helper_answer: str = ""

    def _action(self, prompt: str) -> str:
        if "The planner has proposed" in prompt.rsplit("# Step", 1)[-1]:
            return self.helper_answer
        return self.script[int(_STEP.findall(prompt)[-1])]


def _run(problem_id: str, arm: str, model, **settings) -> dict:
    problem = get_problem(problem_id)
    chosen = SolverSettings(**settings)
    graph = build_solver(problem, Arm(arm), model, chosen).compile()
    return graph.invoke({}, {"recursion_limit": recursion_limit(chosen)})


@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("problem_id", ["blocksworld-07", "gripper-03", "tyreworld-05"])
def test_replaying_the_optimal_plan_solves_the_problem_in_every_arm(arm, problem_id):
    problem = get_problem(problem_id)
    model = PlanReplayer(plan=problem.optimal_plan)
    state = _run(problem_id, arm, model, step_limit=20, summary_every=2)
    outcome = episode_outcome(problem, state)
    assert (outcome.reward, outcome.success) == (1.0, True)
    assert outcome.steps == outcome.valid_steps == problem.optimal_length
    assert [s["action"] for s in state["steps"]] == list(problem.optimal_plan)
    assert state["steps"][-1]["goal_reached"] and state["steps"][-1]["progress"] == 1.0
    # every model call is accounted, per agent and kind, with the backend's counts
    usage = state["usage"]
    assert usage["planner"]["agent_turn"]["calls"] == problem.optimal_length
    assert all(s["usage"]["input_tokens"] > 0 for s in state["steps"])
    kinds = {(agent, kind) for agent, ks in usage.items() for kind in ks}
    expected = {("planner", "agent_turn")}
    if arm.startswith("intrinsic-"):
        expected.add(("planner", "memory_update"))
        assert usage["planner"]["memory_update"]["calls"] == problem.optimal_length
        assert state["intrinsic_memory"]["planner"]["version"] == problem.optimal_length
    if arm == "intrinsic-llm":
        expected |= {("planner", "template_generation"), ("helper", "template_generation")}
        memories = state["intrinsic_memory"]
        assert {a for a, m in memories.items() if m.get("template")} == {"planner", "helper"}
    if arm == "summary" and problem.optimal_length > 2:
        expected.add(("summarizer", "summary"))
        assert usage["summarizer"]["summary"]["calls"] == (problem.optimal_length - 1) // 2
    assert kinds == expected
    total = sum(
        u["input_tokens"] + u["output_tokens"] for ks in usage.values() for u in ks.values()
    )
    assert outcome.tokens == total


# goal of blocksworld-07: (on d c), (on c b), (on b a); a, b, c, d start on the table
WALK = {
    1: "check valid actions",
    2: "pick-up b",
    3: "stack b a",  # (on b a): 1 of 3
    4: "stack c b",  # not holding c: invalid
    5: "stack c b",  # invalid again
    6: "stack c b",  # the third time: the planner is stuck, the helper acts
    7: "stack c b",  # (on c b): 2 of 3
    8: "unstack c b",  # back to 1 of 3; the best stays 2 of 3
    9: "fly away",
    10: "put-down c",
}
# (agent, action, valid, progress in thirds) per step, computed by hand
BY_HAND = [
    ("planner", CHECK, True, 0),
    ("planner", "pick-up b", True, 0),
    ("planner", "stack b a", True, 1),
    ("planner", "stack c b", False, 1),
    ("planner", "stack c b", False, 1),
    ("helper", "pick-up c", True, 1),
    ("planner", "stack c b", True, 2),
    ("planner", "unstack c b", True, 2),
    ("planner", "fly away", False, 2),
    ("planner", "put-down c", True, 2),
]


@pytest.mark.parametrize("arm", ["none", "full", "summary", "intrinsic-generic"])
def test_a_wandering_team_scores_the_progress_rate_computed_by_hand(arm):
    model = Wanderer(script=WALK, helper_answer="pick-up c")
    state = _run("blocksworld-07", arm, model, step_limit=10, summary_every=4)
    steps = state["steps"]
    got = [(s["agent"], s["action"], s["valid"], round(s["progress"] * 3)) for s in steps]
    assert got == BY_HAND
    assert steps[0]["observation"] == (
        "Valid actions now: pick-up a, pick-up b, pick-up c, pick-up d"
    )
    assert "it needs the hand is holding c" in steps[3]["observation"]
    outcome = episode_outcome(get_problem("blocksworld-07"), state)
    assert outcome.reward == pytest.approx(2 / 3) and not outcome.success
    assert (outcome.steps, outcome.valid_steps) == (10, 7)
    # the stuck proposal cost a call but was not a step; the helper acted once
    assert state["usage"]["planner"]["agent_turn"]["calls"] == 9 + 1  # its 9 steps, 1 proposal
    assert state["usage"]["helper"]["agent_turn"]["calls"] == 1
    said = [m.text for m in state["messages"] if getattr(m, "name", "") == "planner"]
    assert "Proposed again: stack c b" in said


def test_each_arm_shows_its_agents_what_it_promises():
    problem = get_problem("blocksworld-23")  # long enough not to be solved by wandering
    walk = {n: ("pick-up a" if n % 2 else "put-down a") for n in range(1, 31)}
    seen = {}
    for arm in ["none", "full", "summary", "intrinsic-generic"]:
        state = _run(
            problem.id, arm, Wanderer(script=walk), step_limit=24, token_budget=512, summary_every=8
        )
        seen[arm] = [s["context"] for s in state["steps"]]
        assert len(state["steps"]) == 24
    # full: every earlier step; none: the newest that fit the budget, so fewer, then flat
    assert [c["history_steps"] for c in seen["full"]] == list(range(24))
    window = [c["history_steps"] for c in seen["none"]]
    assert window[:3] == [0, 1, 2] and max(window) < 23 and window[-1] == window[-2]
    # summary: the steps since the latest summary, which covers 8 or 16 steps
    summary = seen["summary"]
    assert [c["summary_step"] for c in summary] == [0] * 8 + [8] * 8 + [16] * 8
    assert [c["history_steps"] for c in summary] == list(range(8)) * 3
    # intrinsic: its own memory, one version per earlier turn, and a bounded window
    intrinsic = seen["intrinsic-generic"]
    assert [c["memory_version"] for c in intrinsic] == list(range(24))
    assert intrinsic[-1]["memory"] and max(c["history_steps"] for c in intrinsic) < 23


def test_the_llm_template_is_written_once_and_kept_on_resume():
    from langgraph.checkpoint.memory import InMemorySaver

    problem = get_problem("blocksworld-04")
    model = PlanReplayer(plan=problem.optimal_plan)
    settings = SolverSettings(step_limit=10)
    graph = build_solver(problem, Arm("intrinsic-llm"), model, settings)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": recursion_limit(settings)}
    app = graph.compile(checkpointer=InMemorySaver(), interrupt_after=["planner_memory"])
    app.invoke({}, config)  # stops after the first step's memory update
    first = app.get_state(config).values
    assert len(first["steps"]) == 1 and first["usage"]["planner"]["template_generation"]
    while app.get_state(config).next:
        app.invoke(None, config)
    final = app.get_state(config).values

    def templates(values: dict) -> dict:
        return {agent: m["template"] for agent, m in values["intrinsic_memory"].items()}

    assert templates(final) == templates(first) and len(templates(first)) == 2
    assert final["usage"]["planner"]["template_generation"]["calls"] == 1
    assert episode_outcome(problem, final).success


@pytest.mark.parametrize(
    ("answer", "action"),
    [
        ("pick-up a", "pick-up a"),
        ("Action: stack a b\nbecause ...", "stack a b"),
        ("`unstack c b`", "unstack c b"),
        ("> put-down a", "put-down a"),
        ("Next action: check valid actions", "check valid actions"),
        ("Act 3: 'pick-up d'", "pick-up d"),
        ("\n\n  move rooma roomb  \n", "move rooma roomb"),
        ("", ""),
    ],
)
def test_the_action_is_read_from_an_answer_as_small_models_write_it(answer, action):
    assert read_action(answer) == action


def test_bad_settings_are_one_line_user_errors():
    from ima.core.errors import UserError

    for bad, match in [
        ({"step_limit": 0}, "step limit 0"),
        ({"token_budget": 100}, "token budget 100"),
        ({"memory_update": "append"}, "use edit or rewrite"),
        ({"summary_every": 0}, "summary every 0"),
    ]:
        with pytest.raises(UserError, match=match):
            SolverSettings(**bad).check()
