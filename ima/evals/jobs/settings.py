"""How jobs run on the engine, from IMA_JOB_* variables (the commands' options override
them): a worker's concurrency, when a silent worker counts as dead, and the retry policy."""

from __future__ import annotations

import os

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from ima.core.errors import UserError


class JobSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="IMA_JOB_")

    concurrency: int = Field(1, ge=1, le=64)
    """Jobs one worker runs at once (threads): 1 for an in-process model, more for a
    model server that serves several calls at once (Ollama, a hosted API)."""
    stall_seconds: float = Field(30.0, gt=0)
    """A worker whose heartbeat is older than this is dead: its jobs are queued again and
    resume from their last checkpoint."""
    retries: int = Field(2, ge=0)
    """Times a failed job is queued again before it stays failed (a stall or a stopped
    worker is not a failure)."""
    retry_seconds: float = Field(10.0, ge=0)
    """Wait before a failed job runs again."""

    @property
    def heartbeat(self) -> float:
        """Seconds between a worker's heartbeats: three may be missed before it is dead."""
        return max(0.5, self.stall_seconds / 4)

    @property
    def sweep_every(self) -> int:
        """Seconds between looks for dead workers' jobs (a cron seconds step: 1-30)."""
        return int(min(30, max(1, self.stall_seconds // 3)))


def job_settings(**given: object) -> JobSettings:
    """The settings (options given here win over IMA_JOB_*); a bad value is one line."""
    try:
        return JobSettings(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        problem = exc.errors()[0]
        name = str(problem["loc"][0]) if problem["loc"] else "?"
        shown = given.get(name, os.environ.get(f"IMA_JOB_{name.upper()}", ""))
        raise UserError(
            f"{name.replace('_', ' ')} {shown!r} is invalid: {problem['msg'].lower()} "
            f"(--{name.replace('_', '-')} or IMA_JOB_{name.upper()})"
        ) from None
