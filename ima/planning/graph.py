"""The planning team as a LangGraph graph, on the public intrinsic-memory API.

G-Memory's PDDL setting (the paper's Table 4 runs): a planner proposes the next action at
every step; when it proposes the same action a third time in a row it is stuck, and a
helper chooses that step's action instead. Each answer is one action, applied to the
environment at once; `check valid actions` lists the actions possible now. An episode ends
when the goal holds or after the step limit; its reward is the progress rate.

    graph = build_solver(get_problem("blocksworld-07"), Arm("intrinsic-generic"), model)
    app = graph.compile(checkpointer=saver)
    app.invoke({}, {"configurable": {"thread_id": "t1"}, "recursion_limit": recursion_limit(settings)})

    START -> setup -> planner -> [planner_memory] -> planner | helper | summarizer | END
                      helper  -> [helper_memory]  -> planner | summarizer | END
                      summarizer -> planner

Memory arms (`ima.planning.arms`) differ only in what each agent's prompt holds before the
current step's question; the model, the step limit and the accounting of every call (per
agent and kind, in `usage`) are the same. Intrinsic arms wrap the agent nodes with
`add_intrinsic_memory`: each agent's memory is updated from its own turn (its action and
what the environment answered).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph

from ima import (
    IntrinsicMemory,
    MemoryTemplate,
    add_intrinsic_memory,
    count_message_tokens,
    prompts,
    write_template,
)
from ima.core.errors import UserError
from ima.models.calls import invoke_model
from ima.pddl import Env, Problem
from ima.planning.arms import Arm
from ima.planning.state import EpisodeState, Step, StepContext

PLANNER, HELPER, SUMMARIZER = "planner", "helper", "summarizer"
AGENTS = (PLANNER, HELPER)
CHECK = "check valid actions"
ENVIRONMENT = "environment"  # the name of observation messages
UPDATE_MODES = ("rewrite", "edit")


@dataclass(frozen=True)
class SolverSettings:
    """What every arm shares: the step limit and the token budgets."""

    step_limit: int = 30
    """Steps before an episode ends unsolved (G-Memory's PDDL runs: 30)."""
    budget: int = 1024
    """Tokens of task, memory and earlier steps an agent sees (none and intrinsic arms)."""
    memory_tokens: int = 256
    """An intrinsic memory's budget; also the length of a summary (summary arm)."""
    memory_update: str = "rewrite"
    """rewrite (the paper) or edit."""
    summary_every: int = 10
    """The summary arm rewrites its summary every this many steps (ChatDev: 10)."""
    answer_tokens: int = 48
    """The most tokens of one answer: an action is a line."""

    def check(self) -> SolverSettings:
        """The settings, or a UserError naming the bad one."""
        if self.step_limit < 1:
            raise UserError(f"step limit {self.step_limit}: give 1 or more")
        if self.budget < 256:
            raise UserError(f"token budget {self.budget}: give 256 or more")
        if self.memory_tokens < 32:
            raise UserError(f"memory budget {self.memory_tokens} tokens: give 32 or more")
        if self.memory_update not in UPDATE_MODES:
            raise UserError(f"memory update {self.memory_update!r}: use rewrite or edit")
        if self.summary_every < 1:
            raise UserError(f"summary every {self.summary_every} steps: give 1 or more")
        return self


def recursion_limit(settings: SolverSettings) -> int:
    """Graph steps an episode may take: per step an agent, its memory, the helper and its
    memory, and a summary at most."""
    return 6 * settings.step_limit + 10


def task_text(problem: Problem, settings: SolverSettings) -> str:
    """The task every agent reads first: the domain's rules, the goal, how to answer."""
    domain = problem.domain_info
    return prompts.render(
        "pddl/task",
        title=domain.title,
        rules=domain.description,
        goal=problem.goal,
        example=problem.optimal_plan[0],
        limit=settings.step_limit,
    )


def role_text(agent: str) -> str:
    """The agent's role (its system prompt)."""
    return prompts.load(f"pddl/{agent}")


# -- reading answers and replaying the episode ---------------------------------------------

_PREFIX = re.compile(
    r"^(?:>|\*+|(?:next\s+)?action(?:\s*\d+)?\s*:|act\s*\d*\s*:|step\s*\d+\s*:)\s*", re.I
)


def read_action(answer: str) -> str:
    """The action in an answer: its first non-empty line, without quotes, backticks and a
    leading 'Action:' (the environment reads the rest and says what is wrong with it)."""
    line = next((ln.strip() for ln in answer.splitlines() if ln.strip()), "")
    for _ in range(3):
        line = _PREFIX.sub("", line.strip().strip("`'\"").strip()).strip()
    return line.strip("`'\"").strip()


def _same(action: str) -> str:
    return " ".join(action.lower().split()).rstrip(".")


def is_check(action: str) -> bool:
    return _same(action).replace("`", "") in (CHECK, "check valid action")


def stuck(action: str, steps: Sequence[Step]) -> bool:
    """G-Memory's test: the proposal repeats each of the last two steps' actions."""
    return len(steps) >= 2 and all(_same(s["action"]) == _same(action) for s in steps[-2:])


def replay(problem: Problem, steps: Sequence[Step]) -> Env:
    """The environment after these steps (deterministic: actions are all it needs)."""
    return Env.replay(problem, [s["action"] for s in steps if not s["check"]])


# -- what an agent sees ---------------------------------------------------------------------

History = Callable[[Mapping[str, Any]], list[BaseMessage]]


def _newest_that_fit(messages: Sequence[BaseMessage], budget: int) -> list[BaseMessage]:
    """The task (first message) and the newest whole messages that fit the budget."""
    if not messages:
        return []
    room = budget - count_message_tokens(messages[:1])
    kept: list[BaseMessage] = []
    for message in reversed(messages[1:]):
        room -= count_message_tokens([message])
        if room < 0:
            break
        kept.append(message)
    return [messages[0], *reversed(kept)]


def _history(arm: Arm, settings: SolverSettings) -> History:
    def everything(state: Mapping[str, Any]) -> list[BaseMessage]:
        return list(state.get("messages") or [])

    def window(state: Mapping[str, Any]) -> list[BaseMessage]:
        return _newest_that_fit(state.get("messages") or [], settings.budget)

    def summarised(state: Mapping[str, Any]) -> list[BaseMessage]:
        messages = list(state.get("messages") or [])
        summaries = state.get("summaries") or []
        if not summaries:
            return messages
        latest = summaries[-1]
        section = prompts.render(
            "pddl/summary_section", step=latest["step"], summary=latest["text"]
        )
        return [messages[0], HumanMessage(section), *messages[state["summary_messages"] :]]

    if arm.intrinsic:
        return everything  # add_intrinsic_memory has fitted the messages to the budget
    return {"none": window, "full": everything, "summary": summarised}[arm.name]


def _context(state: Mapping[str, Any], agent: str, seen: list[BaseMessage]) -> StepContext:
    record = (state.get("intrinsic_memory") or {}).get(agent)  # add_intrinsic_memory's key
    summaries = state.get("summaries") or []
    return StepContext(
        history_steps=sum(getattr(m, "name", None) == ENVIRONMENT for m in seen),
        memory=record["text"] if record else "",
        memory_version=record["version"] if record else 0,
        summary_step=summaries[-1]["step"] if summaries else 0,
    )


# -- the nodes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Solver:
    problem: Problem
    arm: Arm
    model: BaseChatModel
    memory_model: BaseChatModel
    settings: SolverSettings
    managers: dict[tuple[str, str], IntrinsicMemory] = field(default_factory=dict)

    @property
    def task(self) -> str:
        return task_text(self.problem, self.settings)

    def setup(self, state: EpisodeState) -> dict[str, Any]:
        """The task as the conversation's first message; in the intrinsic-llm arm, each
        agent's model writes its memory template from it (once: a resumed run keeps them)."""
        update: dict[str, Any] = {}
        if not state.get("messages"):
            update["messages"] = [HumanMessage(self.task, name="task")]
        if self.arm.template == "llm" and not state.get("templates"):
            templates, usage = {}, {}
            for agent in AGENTS:
                template, cost = write_template(
                    self.model, self.task, role_text(agent), {"ima_role": agent}
                )
                templates[agent] = template.markdown()
                usage[agent] = {"template_generation": cost}
            update |= {"templates": templates, "usage": usage}
        return update

    def agent(self, agent: str) -> Callable[[EpisodeState], dict[str, Any]]:
        history = _history(self.arm, self.settings)
        role = role_text(agent)

        def turn(state: EpisodeState) -> dict[str, Any]:
            steps = list(state.get("steps") or [])
            env = replay(self.problem, steps)
            number = len(steps) + 1
            seen = history(state)
            ask = prompts.render(
                "pddl/helper_step" if agent == HELPER else "pddl/step",
                step=number,
                limit=self.settings.step_limit,
                state=env.observation(),
                goal=self.problem.goal,
                proposal=state.get("proposal", ""),
            )
            reply = invoke_model(
                self.model,
                [SystemMessage(role), *seen, HumanMessage(ask)],
                {"ima_kind": "agent_turn", "ima_role": agent},
                self.settings.answer_tokens,
            )
            action = read_action(reply.text)
            usage = {agent: {"agent_turn": reply.usage}}
            if agent == PLANNER and stuck(action, steps):
                return {
                    "messages": [
                        AIMessage(f"Proposed again: {action}", name=agent),
                        HumanMessage(prompts.render("pddl/stuck", action=action), name="team"),
                    ],
                    "proposal": action,
                    "usage": usage,
                }
            if is_check(action):
                action = CHECK
                valid, observation = True, "Valid actions now: " + ", ".join(env.valid_actions())
            else:
                result = env.step(action)
                valid, observation = result.valid, result.message
            step = Step(
                index=number,
                agent=agent,
                answer=reply.text,
                action=action,
                check=action == CHECK,
                valid=valid,
                observation=observation,
                progress=env.progress,
                goal_reached=env.is_goal(),
                usage=reply.usage,
                context=_context(state, agent, seen),
            )
            return {
                "messages": [
                    AIMessage(f"Action {number}: {action}", name=agent),
                    HumanMessage(f"Observation {number}: {observation}", name=ENVIRONMENT),
                ],
                "steps": [step],
                "usage": usage,
                "proposal": "",
            }

        return turn

    def summarize(self, state: EpisodeState) -> dict[str, Any]:
        """ChatDev's memory: the summary rewritten from the previous one and the new steps."""
        steps = state.get("steps") or []
        summaries = state.get("summaries") or []
        since = summaries[-1]["step"] if summaries else 0
        lines = [
            f"{s['index']}. {s['agent']}: {s['action']} -> {s['observation']}"
            for s in steps[since:]
        ]
        words = self.settings.memory_tokens * 3 // 4
        reply = invoke_model(
            self.memory_model,
            [
                SystemMessage(prompts.load("pddl/summary_system")),
                HumanMessage(
                    prompts.render(
                        "pddl/summary",
                        task=self.task,
                        summary=summaries[-1]["text"] if summaries else "(none yet)",
                        steps="\n".join(lines),
                        words=words,
                    )
                ),
            ],
            {"ima_kind": "summary", "ima_role": SUMMARIZER},
            self.settings.memory_tokens,
        )
        return {
            "summaries": [{"step": len(steps), "text": reply.text}],
            "summary_messages": len(state.get("messages") or []),
            "usage": {SUMMARIZER: {"summary": reply.usage}},
        }

    # -- routing

    def after_step(self, state: EpisodeState) -> str:
        steps = state.get("steps") or []
        if steps and (steps[-1]["goal_reached"] or len(steps) >= self.settings.step_limit):
            return END
        if self.arm.name == "summary":
            summaries = state.get("summaries") or []
            since = summaries[-1]["step"] if summaries else 0
            if len(steps) - since >= self.settings.summary_every:
                return SUMMARIZER
        return PLANNER

    def after_planner(self, state: EpisodeState) -> str:
        return HELPER if state.get("proposal") else self.after_step(state)

    # -- memory

    def memory(
        self, agent: str
    ) -> IntrinsicMemory | Callable[[Mapping[str, Any]], IntrinsicMemory]:
        template = self.arm.template
        if template == "llm":
            return lambda state: self._memory(state["templates"][agent], "llm")
        if template == "manual":
            return self._memory(self.problem.domain_info.memory_template, "manual")
        return self._memory("generic", "generic")

    def _memory(self, template: str, kind: str) -> IntrinsicMemory:
        key = (template, kind)
        if key not in self.managers:  # one per template: its limits are computed once
            shaped = template if kind == "generic" else MemoryTemplate.from_markdown(template, kind)
            self.managers[key] = IntrinsicMemory(
                self.memory_model,
                shaped,
                tokens=self.settings.memory_tokens,
                mode=self.settings.memory_update,  # type: ignore[arg-type]
            )
        return self.managers[key]


def build_solver(
    problem: Problem,
    arm: Arm,
    model: BaseChatModel,
    settings: SolverSettings | None = None,
    *,
    memory_model: BaseChatModel | None = None,
) -> StateGraph:
    """The planning team for one problem and memory arm, as an uncompiled graph.

    Args:
        problem: the PDDL problem (`ima.pddl.get_problem`).
        arm: the memory arm (`ima.planning.Arm`, one of `ARMS`).
        model: the agents' chat model.
        settings: step limit and budgets (default `SolverSettings()`).
        memory_model: the model of memory updates and summaries (default: `model`).

    Run it from empty input (`{}`); compile it with a checkpointer to resume an episode,
    and give `recursion_limit(settings)` in the run's config.
    """
    solver = _Solver(
        problem, arm, model, memory_model or model, (settings or SolverSettings()).check()
    )
    builder = StateGraph(EpisodeState)
    builder.add_node("setup", solver.setup)
    builder.add_node(PLANNER, solver.agent(PLANNER))
    builder.add_node(HELPER, solver.agent(HELPER))
    builder.add_edge(START, "setup")
    builder.add_edge("setup", PLANNER)
    summarizing = [SUMMARIZER] if arm.name == "summary" else []
    builder.add_conditional_edges(
        PLANNER, solver.after_planner, [PLANNER, HELPER, *summarizing, END]
    )
    builder.add_conditional_edges(HELPER, solver.after_step, [PLANNER, *summarizing, END])
    if summarizing:
        builder.add_node(SUMMARIZER, solver.summarize)
        builder.add_edge(SUMMARIZER, PLANNER)
    if arm.intrinsic:
        for agent in AGENTS:
            add_intrinsic_memory(
                builder,
                agent,
                solver.memory(agent),
                budget=solver.settings.budget,
                role=role_text(agent),
                usage_key="usage",
            )
    return builder
