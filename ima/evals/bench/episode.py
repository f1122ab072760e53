"""One episode of a benchmark: its graph run (or resumed) on a thread of the shared database
under the thread's lease, and the result row stored for the report.

A killed episode resumes from its last checkpoint (each graph step is saved before the
next starts); one that had ended is not run again, only stored. An ended episode's thread
keeps its last checkpoint only: its row holds every step for the report and its page.
A cross-task episode starts from the memory its chain's previous episode ended with; that
start is its first checkpoint, so a resumed one goes on from where it was, like any other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from intrinsic_memory import AgentMemory
from langchain_core.language_models import BaseChatModel

from ima.core.errors import UserError
from ima.evals.bench.plan import BenchPlan, Episode
from ima.models import load_chat_model
from ima.planning import Arm, BenchTask, build_solver, episode_outcome, get_adapter, recursion_limit
from ima.runs.checkpoints import compact_thread
from ima.runs.database import Database
from ima.runs.leases import Lease

Progress = Callable[[dict[str, Any]], None]  # {"step", "limit", "tokens"} after each step
ModelFactory = Callable[[int], BaseChatModel]  # seed -> the agents' model
Memories = Mapping[str, AgentMemory]


def plan_model(plan: BenchPlan) -> ModelFactory:
    """The plan's model for a seed: every arm of a seed gets the same model."""
    return lambda seed: load_chat_model(plan.model, seed, plan.temperature, plan.call_timeout)


def _task(plan: BenchPlan, episode: Episode, fingerprint: str | None) -> BenchTask:
    task = get_adapter(plan.env).task(episode.task)
    if fingerprint and task.fingerprint != fingerprint:
        raise UserError(
            f"task {task.id} differs on this machine from the one queued (fingerprint "
            f"{task.fingerprint} vs {fingerprint}): install the same ima version everywhere"
        )
    return task


def run_episode(
    plan: BenchPlan,
    episode: Episode,
    db: Database,
    thread_id: str,
    lease: Lease,
    *,
    fingerprint: str | None = None,
    start_memory: Memories | None = None,
    model: ModelFactory | None = None,
    progress: Progress = lambda event: None,
) -> dict[str, Any]:
    """Run or resume the episode on `thread_id` (whose lease the caller holds); its row.
    `start_memory`: each agent's memory to start from (the cross-task arm), used only when
    the episode starts, never when it resumes."""
    task = _task(plan, episode, fingerprint)
    chat_model = (model or plan_model(plan))(episode.seed)
    graph = build_solver(task, Arm(episode.arm), chat_model, plan.settings)
    limit = plan.settings.limit_for(task.step_limit)
    config: Any = {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": recursion_limit(plan.settings, limit),
    }
    started = time.perf_counter()
    with db.checkpointer() as saver:
        saver.fence = lease  # every checkpoint write is refused once the lease is lost
        app = graph.compile(checkpointer=saver)
        resumed = bool(app.get_state(config).values)
        start = {"intrinsic_memory": dict(start_memory)} if start_memory else {}
        tokens = 0
        for chunk in app.stream(
            None if resumed else start,
            config,
            context=plan.settings,
            stream_mode="updates",
            durability="sync",
        ):
            for update in chunk.values():
                if not isinstance(update, dict):
                    continue
                for kinds in (update.get("usage") or {}).values():
                    tokens += sum(u["input_tokens"] + u["output_tokens"] for u in kinds.values())
                for step in update.get("steps") or []:
                    progress({"step": step["index"], "limit": limit, "tokens": tokens})
        snapshot = app.get_state(config)
        values = dict(snapshot.values)
        if not snapshot.next:  # ended: its stored row shows every step, keep the end only
            compact_thread(saver, app, config)
    wall = time.perf_counter() - started
    return episode_row(plan, episode, task, thread_id, values, wall, resumed, start_memory)


def carried(values: Mapping[str, Any]) -> dict[str, AgentMemory]:
    """Each agent's memory as an episode ended, as the next one of a chain starts from it
    (its last output is processed: nothing is pending)."""
    return {
        agent: AgentMemory(**{k: v for k, v in record.items() if k != "pending"})  # type: ignore[typeddict-item]
        for agent, record in (values.get("intrinsic_memory") or {}).items()
    }


def episode_row(
    plan: BenchPlan,
    episode: Episode,
    task: BenchTask,
    thread_id: str,
    values: dict[str, Any],
    wall_seconds: float,
    resumed: bool,
    start_memory: Memories | None = None,
) -> dict[str, Any]:
    """The stored result: the outcome, its cost and the whole episode for its page."""
    outcome = episode_outcome(task, values)
    steps = list(values.get("steps") or [])
    memories = values.get("intrinsic_memory") or {}
    cross = Arm(episode.arm).cross_task
    failed = bool(steps) and steps[-1].get("done", False) and not outcome.success
    return {
        "kind": plan.env,
        "key": episode.key,
        "thread_id": thread_id,
        **asdict(episode),
        "env": plan.env,
        "family": task.family,
        "goal": task.goal,
        "oracle_length": len(task.oracle),
        "model": plan.model,
        "step_limit": plan.settings.limit_for(task.step_limit),
        "status": "solved" if outcome.success else "failed" if failed else "step_limit",
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
                for agent, record in memories.items()
                if record.get("template")
            },
            "memories": {agent: record["text"] for agent, record in memories.items()},
            # the cross-task arm: what it started from, what the next task starts from
            "start_memory": dict(start_memory or {}) if cross else {},
            "end_memory": carried(values) if cross else {},
        },
        "finished_at": datetime.now().isoformat(timespec="seconds"),
    }
