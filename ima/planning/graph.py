"""The planning team as a LangGraph graph, on the public intrinsic-memory API, for any
environment with an adapter (`ima.planning.adapters`: PDDL, BabyAI, TWC).

G-Memory's PDDL setting (the paper's Table 4 runs): a planner proposes the next action at
every step; when it proposes the same action a third time in a row it is stuck, and a
helper chooses that step's action instead. Each answer is one action, applied to the
environment at once; `check valid actions` lists the actions possible now. An episode ends
when the task is solved (or has failed for good) or after the step limit; its reward is
the environment's progress.

    task = get_adapter("babyai").task("babyai-gotolocal-s0")
    graph = build_solver(task, Arm("intrinsic-generic"), model, settings)
    app = graph.compile(checkpointer=saver)
    app.invoke({}, {"configurable": {"thread_id": "t1"},
                    "recursion_limit": recursion_limit(settings, task.step_limit)})

    START -> setup -> planner -> [planner_memory] -> planner | helper | summarizer | END
                      helper  -> [helper_memory]  -> planner | summarizer | END
                      summarizer -> planner

Memory arms (`ima.planning.arms`) differ only in what each agent's prompt holds before the
current step's question; the model, the step limit and the accounting of every call (per
agent and kind, in `usage`) are the same. Intrinsic arms add the agent nodes with
`add_intrinsic_memory`: each agent's memory is updated from its own turn (its action and
what the environment answered). The input may hold each agent's memory to start from
(`{"intrinsic_memory": {agent: AgentMemory}}`): the cross-task arm's previous task's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from intrinsic_memory import (
    AgentMemory,
    IntrinsicMemory,
    MemoryTemplate,
    add_intrinsic_memory,
    write_template,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph

from ima import prompts
from ima.models.calls import invoke_model
from ima.planning.adapter import BenchTask, Playable
from ima.planning.adapters import as_task
from ima.planning.answers import CHECK, actions_of, is_check, read_action, stuck
from ima.planning.arms import Arm
from ima.planning.context import ENVIRONMENT, history_for, step_context, task_text
from ima.planning.settings import SolverSettings
from ima.planning.state import EpisodeState, Step

PLANNER, HELPER, SUMMARIZER = "planner", "helper", "summarizer"
AGENTS = (PLANNER, HELPER)


@dataclass(frozen=True)
class _Solver:
    task: BenchTask
    arm: Arm
    model: BaseChatModel
    memory_model: BaseChatModel
    settings: SolverSettings
    _live: list[Playable] = field(default_factory=list)  # the environment played last

    @property
    def task_prompt(self) -> str:
        return task_text(self.task, self.settings)

    @property
    def limit(self) -> int:
        return self.settings.limit_for(self.task.step_limit)

    def role(self, agent: str) -> str:
        return self.task.adapter.role(agent)

    def env(self, steps: Sequence[Step]) -> Playable:
        """The environment after these steps: the one stepped last when it is that one, else
        replayed (after a resume; a TWC game takes a tenth of a second to load)."""
        actions = actions_of(steps)
        if not (self._live and list(self._live[0].actions) == actions):
            self._live[:] = [self.task.replay(actions)]
        return self._live[0]

    def setup(self, state: EpisodeState) -> dict[str, Any]:
        """The task as the conversation's first message; in the intrinsic-llm arm, each
        agent's model writes its memory template from it (once: a resumed run keeps them)."""
        update: dict[str, Any] = {}
        if not state.get("messages"):
            update["messages"] = [HumanMessage(self.task_prompt, name="task")]
        if self.arm.template == "llm" and not state.get("intrinsic_memory"):
            memories, usage = {}, {}
            for agent in AGENTS:
                template, cost = write_template(
                    self.model, self.task_prompt, self.role(agent), {"ima_role": agent}
                )
                memories[agent] = AgentMemory(text="", version=0, template=template.markdown())
                usage[agent] = {"template_generation": cost}
            update |= {"intrinsic_memory": memories, "usage": usage}
        return update

    def agent(self, agent: str) -> Callable[[EpisodeState], dict[str, Any]]:
        history = history_for(self.arm, self.settings)
        role = self.role(agent)

        def turn(state: EpisodeState) -> dict[str, Any]:
            steps = list(state.get("steps") or [])
            env = self.env(steps)
            number = len(steps) + 1
            seen = history(state)
            ask = prompts.render(
                "team/helper_step" if agent == HELPER else "team/step",
                step=number,
                limit=self.limit,
                state=env.observation(),
                goal=self.task.goal,
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
                        HumanMessage(prompts.render("team/stuck", action=action), name="team"),
                    ],
                    "proposal": action,
                    "usage": usage,
                }
            if is_check(action):
                action = CHECK
                valid, observation = True, "Valid actions now: " + ", ".join(env.valid_actions())
                reached = False
            else:
                result = env.step(action)
                valid, observation, reached = result.valid, result.message, result.goal_reached
            step = Step(
                index=number,
                agent=agent,
                answer=reply.text,
                action=action,
                check=action == CHECK,
                valid=valid,
                observation=observation,
                progress=env.progress,
                goal_reached=reached,
                done=env.done,
                usage=reply.usage,
                context=step_context(state, agent, seen),
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
                SystemMessage(prompts.load("team/summary_system")),
                HumanMessage(
                    prompts.render(
                        "team/summary",
                        task=self.task_prompt,
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
        last = steps[-1] if steps else None
        if last and (last["goal_reached"] or last.get("done") or len(steps) >= self.limit):
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

    def memory(self) -> IntrinsicMemory:
        """The arm's memory manager (in the llm arm, each agent keeps the template it wrote
        in its own memory record, which the manager follows)."""
        shaped = (
            MemoryTemplate.of(self.task.adapter.memory_template(self.task), kind="manual")
            if self.arm.template == "manual"
            else "generic"
        )
        return IntrinsicMemory(
            self.memory_model,
            shaped,
            memory_tokens=self.settings.memory_tokens,
            mode=self.settings.memory_update,  # type: ignore[arg-type]
            # A step's action is news even when it repeats one: the memory tracks the
            # episode, and every arm updates after every step, as the paper does.
            min_new_words=0,
        )


def build_solver(
    task: BenchTask | Any,
    arm: Arm,
    model: BaseChatModel,
    settings: SolverSettings | None = None,
    *,
    memory_model: BaseChatModel | None = None,
) -> StateGraph:
    """The planning team for one task and memory arm, as an uncompiled graph.

    Args:
        task: the task (`get_adapter(NAME).task(ID)`; a PDDL `Problem` is taken too).
        arm: the memory arm (`ima.planning.Arm`, one of `ARMS`).
        model: the agents' chat model.
        settings: step limit and budgets (default `SolverSettings()`).
        memory_model: the model of memory updates and summaries (default: `model`).

    Run it from empty input (`{}`), or from each agent's memory to start with
    (`{"intrinsic_memory": ...}`, intrinsic arms); compile it with a checkpointer to resume
    an episode, and give `recursion_limit(settings, step_limit)` in the run's config.
    """
    solver = _Solver(
        as_task(task), arm, model, memory_model or model, (settings or SolverSettings()).check()
    )
    builder = StateGraph(EpisodeState)
    builder.add_node("setup", solver.setup)
    after: dict[str, str] = {}
    memory = solver.memory() if arm.intrinsic else None
    for agent in AGENTS:
        if memory is None:
            builder.add_node(agent, solver.agent(agent))
            after[agent] = agent
        else:  # the agent, then its memory step, which the edges below leave from
            after[agent] = add_intrinsic_memory(
                builder,
                agent,
                solver.agent(agent),
                memory,
                token_budget=solver.settings.token_budget,
                role=solver.role(agent),
                usage_key="usage",
            )
    builder.add_edge(START, "setup")
    builder.add_edge("setup", PLANNER)
    summarizing = [SUMMARIZER] if arm.name == "summary" else []
    builder.add_conditional_edges(
        after[PLANNER], solver.after_planner, [PLANNER, HELPER, *summarizing, END]
    )
    builder.add_conditional_edges(after[HELPER], solver.after_step, [PLANNER, *summarizing, END])
    if summarizing:
        builder.add_node(SUMMARIZER, solver.summarize)
        builder.add_edge(SUMMARIZER, PLANNER)
    return builder
