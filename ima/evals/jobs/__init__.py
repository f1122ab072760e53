"""Jobs: evaluation runs, benchmark episodes and queued `ima run`s.

On one machine (SQLite) they run in the process that plans them (`local`). Beyond one
machine they are procrastinate jobs in the shared PostgreSQL database (`engine`,
`tasks`, `queueing`), run by workers on any machine: `ima worker`, or procrastinate's own
command, `IMA_DB=postgresql://... procrastinate --app ima.evals.jobs.app worker`.
"""

from ima.evals.jobs.engine import app

__all__ = ["app"]
