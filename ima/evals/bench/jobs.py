"""One episode as a job: run in this process (`ima bench ENV` on SQLite) or by a worker of
the job engine (ima.evals.jobs), it holds the episode's thread while it runs (or resumes)
the episode and stores its row once.

A cross-task episode starts from the stored memory of its chain's previous episode; once
it is stored, the job hands the chain's next episode to `follow` (the engine queues it, a
local run starts it). A job that finds its episode stored already (its worker was killed
between storing and finishing) only hands on the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ima.evals.bench.episode import run_episode
from ima.evals.bench.plan import Episode, plan_from_config
from ima.evals.shared import SharedEvaluation
from ima.runs import leases

Follow = Callable[[Episode], None]


def run_job(
    shared: SharedEvaluation,
    config: dict[str, Any],
    episode: Episode,
    progress: Callable[[dict[str, Any]], None],
    follow: Follow = lambda episode: None,
    *,
    wait: bool = False,
) -> dict[str, Any]:
    """Run (or resume) the episode and store its row; the row. `wait`: for the thread's
    lease while another process holds it (a killed worker's, on another machine)."""
    plan = plan_from_config(config)
    thread = episode.thread_id(shared.name, plan.env)
    with leases.hold(shared.db, thread, wait=wait) as lease:
        row = shared.get(episode.key)
        if row is None:
            start = None
            if episode.after:
                before = shared.get(episode.after)
                if before is None:
                    raise RuntimeError(
                        f"{episode.key} starts from the memory {episode.after} ended with, "
                        "which is not stored: run the benchmark's command again to queue "
                        "its chain in order"
                    )
                start = before["episode"]["end_memory"]
            row = run_episode(
                plan,
                episode,
                shared.db,
                thread,
                lease,
                fingerprint=(config.get("fingerprints") or {}).get(episode.task),
                start_memory=start,
                progress=progress,
            )
            shared.append(row, lease)
    following = plan.next_in_chain(episode)
    if following is not None and shared.get(following.key) is None:
        follow(following)
    return row
