"""A queued episode as a worker runs it: `ima worker` and `ima bench ENV` claim jobs from the
evaluation queue (ima.evals.queue); a job whose configuration is a benchmark's is an
episode, run here and stored in the benchmark's results.

A cross-task episode starts from the stored memory of its chain's previous episode; once
it is stored, the chain's next episode is queued (before the job is marked done, so a
worker killed in between leaves the job to be claimed again, which stores the ended
episode again and queues the next).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from ima.evals.bench.episode import run_episode
from ima.evals.bench.plan import Episode, plan_from_config
from ima.evals.queue import Job, SharedEvaluation
from ima.runs.leases import Lease


def run_job(
    shared: SharedEvaluation,
    config: dict[str, Any],
    job: Job,
    lease: Lease,
    progress: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Run (or resume) the job's episode and store its row; the row."""
    plan = plan_from_config(config)
    episode = Episode.from_run(job.run)
    start = None
    if episode.after:
        before = shared.get(episode.after)
        if before is None:
            raise RuntimeError(
                f"{episode.key} starts from the memory {episode.after} ended with, which is "
                "not stored: run the benchmark's command again to queue its chain in order"
            )
        start = before["episode"]["end_memory"]
    row = run_episode(
        plan,
        episode,
        shared.db,
        job.thread_id,
        lease,
        fingerprint=(config.get("fingerprints") or {}).get(episode.task),
        start_memory=start,
        progress=progress,
    )
    shared.append(row)
    following = plan.next_in_chain(episode)
    if following is not None and shared.get(following.key) is None:
        shared.enqueue(
            [(following.key, following.thread_id(shared.name, plan.env), asdict(following))]
        )
    return row
