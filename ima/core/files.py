"""The one atomic file writer: a reader sees the old file or the whole new one, never a part
(run outputs, evaluation files, run pages, plots, the model and tokenizer caches).

The text goes to a temporary file beside the target (same file system, so the rename is
atomic) with a name no other process or thread can share, is flushed to disk, and is
renamed over the target; on any failure the temporary file is removed and the target is
left as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ima.core.processes import process_alive


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """`with atomic_path(path) as tmp: write(tmp)`, for writers that open the file themselves:
    `path` holds what was written to `tmp` once the block ends, or is untouched if it raises
    (`tmp` is then removed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        with open(tmp, "rb") as written:  # durable before it takes the target's name
            os.fsync(written.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


@contextlib.contextmanager
def atomic_writer(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """`with atomic_writer(path) as out: out.write(...)`: `path` holds everything written
    once the block ends, or is untouched if it raises. The file gets the user's usual
    permissions (opened with "x": never another file's)."""
    with (
        atomic_path(path) as tmp,
        open(tmp, "xb") if binary else open(tmp, "x", encoding="utf-8") as out,
    ):
        yield out
        out.flush()


def remove_abandoned_temporaries(path: Path, *, idle_seconds: float = 60.0) -> None:
    """Remove the temporary files of `path` left by processes killed mid-write (a killed
    process cannot clean up): their writer's PID is dead and nothing wrote to them lately."""
    cutoff = time.time() - idle_seconds
    for tmp in Path(path).parent.glob(f".{Path(path).name}.*.tmp"):
        pid = tmp.name.removeprefix(f".{Path(path).name}.").split(".", 1)[0]
        with contextlib.suppress(OSError):
            if pid.isdigit() and not process_alive(int(pid)) and tmp.stat().st_mtime < cutoff:
                tmp.unlink()


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every system opens folders)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_writer(path) as out:
        out.write(text)


def write_json_atomic(path: Path, data: Any) -> None:
    """Indented JSON with a final newline; the folder is created if missing."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
