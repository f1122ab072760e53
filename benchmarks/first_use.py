"""First-use set-up time from a fresh clone: what `make run` does before the meeting starts.

Clones this repository into a temporary folder, runs `make .venv/.installed` there (the
virtual environment, uv, and the app with the library at the versions uv.lock pins), then
assembles the bundled model and loads it. Prints each step's time. uv's cache is used as it
is; `--cold` gives uv an empty cache, so every download counts, as on a new machine.

    python -m benchmarks.first_use [--cold]
    python -m benchmarks.first_use --python .venv/bin/python --model scripted   (a check:
        no new environment, the clone run by an existing interpreter, no model to load)
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--cold", action="store_true", help="install with an empty uv cache")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ima-first-use-") as tmp:
        clone, cache = Path(tmp) / "clone", Path(tmp) / "cache"
        total = timed("git clone", ["git", "clone", "-q", str(ROOT), str(clone)], Path(tmp))
        python = args.python or str(clone / ".venv" / "bin" / "python")
        if not args.python:
            env = dict(os.environ)
            if args.cold:
                env["UV_CACHE_DIR"] = str(Path(tmp) / "uv-cache")
            label = "make .venv/.installed" + (" (empty uv cache)" if args.cold else "")
            total += timed(label, ["make", "-s", ".venv/.installed"], clone, env)
        call = EMBEDDED_CALL if args.model == "embedded" else OTHER_CALL.format(spec=args.model)
        env = {"IMA_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
        total += timed("assemble the model, load it, one call", [python, "-c", call], clone, env)
        print(f"{'first use, before the meeting starts':44}{total:8.1f} s  (target < 120 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
