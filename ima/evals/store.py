"""The results store of an evaluation: one JSON line per finished run, appended durably.

A line is written (append, flush, fsync) as soon as its run is judged, so an interrupted
evaluation loses nothing it finished and `ima eval` resumes by skipping stored keys. A torn
last line (the process died mid-write) is ignored on reading and counted, never fatal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ima.core.errors import UserError
from ima.core.files import write_json_atomic

# An evaluation directory: results and configuration; the runs' checkpoints (local
# evaluations), each run's outputs under runs/THREAD/ with its page.
RESULTS_FILE = "results.jsonl"
CONFIG_FILE = "config.json"
DB_FILE = "ima.sqlite"
RUNS_DIR = "runs"
VIEW_FILE = "view.html"


class ResultsStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / RESULTS_FILE
        self.skipped_lines = 0  # unreadable lines seen by the last load()

    def load(self) -> list[dict[str, Any]]:
        """Every stored run, the latest line winning for a repeated key, in file order."""
        if not self.path.exists():
            return []
        by_key: dict[str, dict[str, Any]] = {}
        self.skipped_lines = 0
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                self.skipped_lines += 1
                continue
            if isinstance(row, dict) and "key" in row:
                by_key.pop(row["key"], None)
                by_key[row["key"]] = row
            else:
                self.skipped_lines += 1
        return list(by_key.values())

    def keys(self) -> set[str]:
        return {row["key"] for row in self.load()}

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored row of one key (None: not stored)."""
        return next((row for row in self.load() if row["key"] == key), None)

    def read_config(self) -> dict[str, Any] | None:
        return read_config(self.directory)

    def write_config(self, config: dict[str, Any]) -> None:
        write_json_atomic(self.directory / CONFIG_FILE, config)

    def append(self, row: dict[str, Any], lease: object = None) -> None:
        """Append one run durably; a torn earlier line is closed off first. (`lease`: the
        run's thread, held by the caller; this file is this evaluation's alone.)"""
        self.directory.mkdir(parents=True, exist_ok=True)
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self.path.open("a+b") as f:
            f.seek(0, os.SEEK_END)
            if f.tell():
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a killed writer left half a line: end it
                    f.write(b"\n")
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())


def read_config(directory: Path) -> dict[str, Any] | None:
    path = directory / CONFIG_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}; delete it or choose another --out") from None
