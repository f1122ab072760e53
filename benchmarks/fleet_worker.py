"""`ima worker` as the fleet benchmark runs it: the real command, plus what only the
benchmark needs.

- A witness: every turn a job adds to a conversation is logged (thread, who: the process
  and the job's thread in it, turn, database time) in the table `bench_activity`, and every
  result a job stores (key, who, whether the row was written) in `bench_results`, so the
  benchmark can prove, independently of locks and leases, that no conversation was
  advanced by two jobs at once and no result was written twice.
- Lessons: the scripted model's memory rewrites also hold decisions (one shared by every
  run, one per seed), so each finished run teaches long-term memory something and
  concurrent learning can be checked for lost updates.

    python -m benchmarks.fleet_worker --db URL [ima worker options]
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

import psycopg

from ima.evals import runner as eval_runner
from ima.evals.shared import SharedEvaluation
from ima.models.scripted import ScriptedChatModel

COMMON_LESSON = "Storage format: Parquet on object storage for raw sensor logs"
WITNESS = (
    "CREATE TABLE IF NOT EXISTS bench_activity (thread_id TEXT NOT NULL, who TEXT NOT NULL, "
    "turn BIGINT NOT NULL, at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS bench_results (eval TEXT NOT NULL, key TEXT NOT NULL, "
    "who TEXT NOT NULL, written BOOLEAN NOT NULL)",
)


def seed_lesson(seed: int) -> str:
    return f"Seed {seed} finding: batch uploads at depot number {seed} need retries"


def _memory_with_lessons(self: ScriptedChatModel, prompt: str, edit: bool) -> str:
    """The scripted memory update, with a lesson every run shares and one of its seed's
    under the generic template's decisions and requirements (lessons are drawn from those)."""
    answer = json.loads(_plain_memory(self, prompt, edit))
    lessons = {"decisions_current": COMMON_LESSON, "key_requirements": seed_lesson(self.seed)}
    if edit:
        answer["edits"] += [{"to": key, "add": note} for key, note in lessons.items()]
    else:
        answer.update({key: [note] for key, note in lessons.items()})
    return json.dumps(answer)


_plain_memory = ScriptedChatModel._memory
_plain_append = SharedEvaluation.append


def _who() -> str:
    return f"{os.getpid()}:{threading.get_ident()}"


def _witness(url: str) -> None:
    conn = psycopg.connect(url, autocommit=True)
    for statement in WITNESS:
        conn.execute(statement)
    lock = threading.Lock()  # one connection, shared by the worker's job threads
    real_execute = eval_runner.execute

    def execute(record: Any, db: Any, listener: Any = None, **kwargs: Any) -> Any:
        who = _who()

        def logged(node: str, update: dict[str, Any]) -> None:
            for turn in update.get("transcript") or []:
                with lock:
                    conn.execute(
                        "INSERT INTO bench_activity VALUES (%s, %s, %s, "
                        "EXTRACT(EPOCH FROM clock_timestamp()))",
                        (record.thread_id, who, turn["index"]),
                    )
            if listener:
                listener(node, update)

        return real_execute(record, db, logged, **kwargs)

    def append(self: SharedEvaluation, row: dict[str, Any], lease: Any = None) -> bool:
        written = _plain_append(self, row, lease)
        with lock:
            conn.execute(
                "INSERT INTO bench_results VALUES (%s, %s, %s, %s)",
                (self.name, row["key"], _who(), written),
            )
        return written

    eval_runner.execute = execute  # type: ignore[assignment]
    SharedEvaluation.append = append  # type: ignore[method-assign]


def main() -> None:
    url = sys.argv[sys.argv.index("--db") + 1]
    ScriptedChatModel._memory = _memory_with_lessons  # type: ignore[method-assign]
    _witness(url)
    from ima.cli.app import main as ima_main

    sys.argv = ["ima", "worker", *sys.argv[1:]]
    ima_main()


if __name__ == "__main__":
    main()
