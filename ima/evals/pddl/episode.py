"""One episode of the benchmark: its graph run (or resumed) on a thread of the shared
database under the thread's lease, and the result row stored for the report.

A killed episode resumes from its last checkpoint (each graph step is saved before the
next starts); one that had ended is not run again, only stored. An ended episode's thread
keeps its last checkpoint only: its row holds every step for the report and its page.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel

from ima.core.errors import UserError
from ima.evals.pddl.plan import BenchPlan, Episode, problem_fingerprint
from ima.models import load_chat_model
from ima.pddl import get_problem
from ima.planning import Arm, build_solver, episode_outcome, recursion_limit
from ima.runs.checkpoints import compact_thread
from ima.runs.database import Database
from ima.runs.leases import Lease

Progress = Callable[[dict[str, Any]], None]  # {"step": n, "tokens": t} after each step
ModelFactory = Callable[[int], BaseChatModel]  # seed -> the agents' model


def plan_model(plan: BenchPlan) -> ModelFactory:
    """The plan's model for a seed: every arm of a seed gets the same model."""
    return lambda seed: load_chat_model(plan.model, seed, plan.temperature, plan.call_timeout)


def run_episode(
    plan: BenchPlan,
    episode: Episode,
    db: Database,
    thread_id: str,
    lease: Lease,
    *,
    fingerprint: str | None = None,
    model: ModelFactory | None = None,
    progress: Progress = lambda event: None,
) -> dict[str, Any]:
    """Run or resume the episode on `thread_id` (whose lease the caller holds); its row."""
    problem = get_problem(episode.problem)
    if fingerprint and problem_fingerprint(problem) != fingerprint:
        raise UserError(
            f"problem {problem.id} differs on this machine from the one queued "
            f"(fingerprint {problem_fingerprint(problem)} vs {fingerprint}): install the same "
            "ima version everywhere"
        )
    chat_model = (model or plan_model(plan))(episode.seed)
    graph = build_solver(problem, Arm(episode.arm), chat_model, plan.settings)
    config: Any = {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": recursion_limit(plan.settings),
    }
    started = time.perf_counter()
    with db.checkpointer() as saver:
        saver.fence = lease  # every checkpoint write is refused once the lease is lost
        app = graph.compile(checkpointer=saver)
        resumed = bool(app.get_state(config).values)
        tokens = 0
        for chunk in app.stream(
            None if resumed else {}, config, stream_mode="updates", durability="sync"
        ):
            for update in chunk.values():
                if not isinstance(update, dict):
                    continue
                for kinds in (update.get("usage") or {}).values():
                    tokens += sum(u["input_tokens"] + u["output_tokens"] for u in kinds.values())
                for step in update.get("steps") or []:
                    progress({"step": step["index"], "tokens": tokens})
        snapshot = app.get_state(config)
        values = dict(snapshot.values)
        if not snapshot.next:  # ended: its stored row shows every step, keep the end only
            compact_thread(saver, app, config)
    return episode_row(plan, episode, thread_id, values, time.perf_counter() - started, resumed)


def episode_row(
    plan: BenchPlan,
    episode: Episode,
    thread_id: str,
    values: dict[str, Any],
    wall_seconds: float,
    resumed: bool,
) -> dict[str, Any]:
    """The stored result: the outcome, its cost and the whole episode for its page."""
    problem = get_problem(episode.problem)
    outcome = episode_outcome(problem, values)
    steps = list(values.get("steps") or [])
    memories = values.get("intrinsic_memory") or {}
    return {
        "kind": "pddl",
        "key": episode.key,
        "thread_id": thread_id,
        **asdict(episode),
        "domain": problem.domain,
        "goal": problem.goal,
        "optimal_length": problem.optimal_length,
        "model": plan.model,
        "step_limit": plan.settings.step_limit,
        "status": "solved" if outcome.success else "step_limit",
        "reward": outcome.reward,
        "success": outcome.success,
        "steps": outcome.steps,
        "valid_steps": outcome.valid_steps,
        "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens,
        "calls": outcome.calls,
        "usage": outcome.usage,
        "model_seconds": round(
            sum(u["seconds"] for kinds in outcome.usage.values() for u in kinds.values()), 3
        ),
        "wall_seconds": round(wall_seconds, 3),
        "resumed": resumed,
        "episode": {
            "steps": steps,
            "summaries": list(values.get("summaries") or []),
            "templates": {
                agent: record["template"]
                for agent, record in (values.get("intrinsic_memory") or {}).items()
                if record.get("template")
            },
            "memories": {agent: record["text"] for agent, record in memories.items()},
        },
        "finished_at": datetime.now().isoformat(timespec="seconds"),
    }
