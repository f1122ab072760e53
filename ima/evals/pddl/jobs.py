"""A queued episode as a worker runs it: `ima worker` and `ima bench pddl` claim jobs from
the evaluation queue (ima.evals.queue); a job whose benchmark configuration is of kind
`pddl` is an episode, run here and stored in the benchmark's results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ima.evals.pddl.episode import run_episode
from ima.evals.pddl.plan import KIND, Episode, plan_from_config
from ima.evals.queue import Job, SharedEvaluation
from ima.runs.leases import Lease


def is_pddl(config: dict[str, Any]) -> bool:
    return config.get("kind") == KIND


def run_job(
    shared: SharedEvaluation,
    config: dict[str, Any],
    job: Job,
    lease: Lease,
    progress: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Run (or resume) the job's episode and store its row; the row."""
    episode = Episode(**job.run)
    row = run_episode(
        plan_from_config(config),
        episode,
        shared.db,
        job.thread_id,
        lease,
        fingerprint=(config.get("fingerprints") or {}).get(episode.problem),
        progress=progress,
    )
    shared.append(row)
    return row
