"""A whole design meeting on the embedded model, before and after, measured in one run.

`before` is the previous prompt layout (memory updates repeat the whole task:
`--memory-prompt full`), `after` is today's defaults; both on the same engine, model, seed
and settings, each in a fresh process, one after the other (never two llama.cpp processes
at once on a small machine). Printed: wall time, turns, input tokens counted and evaluated
(not served from the prompt cache), output tokens, per call kind, and the after/before ratios.

    python -m benchmarks.embedded_run [--turn-cap N]     (a full run each: about 20 minutes)
    python -m benchmarks.embedded_run --model scripted --turn-cap 4   (does it run? seconds)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = {"before": ["--memory-prompt", "full"], "after": []}
# The same meeting on llama-cpp-python 0.3.36 (compiled), the previous engine, for reference.
OLD_ENGINE = {"wall_seconds": 544.0, "input_tokens": 102_804, "output_tokens": 9_489}


def ima(*args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env["IMA_CONFIG"] = os.devnull
    command = [sys.executable, "-m", "ima", *args]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"`ima {' '.join(args)}` failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def run(variant: str, turn_cap: int | None, tmp: Path, model: str = "embedded") -> dict[str, Any]:
    """The run record, with the content metrics `ima show` gives."""
    db = ["--db", str(tmp / "ima.sqlite")]
    args = ["run", "--no-long-term", "--json", "--seed", "0", "--thread", variant, *db]
    args += ["--model", model]
    args += ["--out", str(tmp / "runs"), *VARIANTS[variant]]
    record = ima(*args, *(["--turn-cap", str(turn_cap)] if turn_cap else []))
    return record | {"content": ima("show", variant, "--json", *db)["content"]}


def evaluated(usage: dict[str, Any]) -> int:
    return usage["input_tokens"] - usage.get("cached_tokens", 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embedded_run")
    parser.add_argument("--turn-cap", type=int, help="shorter runs (default: whole meetings)")
    parser.add_argument("--model", default="embedded", help="another model (scripted: a check)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ima-embedded-") as tmp:
        records = {v: run(v, args.turn_cap, Path(tmp), args.model) for v in VARIANTS}
    print(f"{'':24}{'before':>12}{'after':>12}{'after/before':>14}")
    rows = [
        ("wall time (s)", lambda r: r["wall_seconds"]),
        ("turns", lambda r: r["turns"]),
        ("input tokens", lambda r: r["usage"]["total"]["input_tokens"]),
        ("input evaluated", lambda r: evaluated(r["usage"]["total"])),
        ("output tokens", lambda r: r["usage"]["total"]["output_tokens"]),
    ]
    for kind in ("agent_turn", "memory_update", "documentation"):
        rows.append((f"  {kind} evaluated", lambda r, k=kind: evaluated(r["usage"]["by_kind"][k])))
        rows.append((f"  {kind} seconds", lambda r, k=kind: r["usage"]["by_kind"][k]["seconds"]))
    for label, get in rows:
        before, after = get(records["before"]), get(records["after"])
        ratio = after / before if before else float("nan")
        print(f"{label:24}{before:>12,.0f}{after:>12,.0f}{ratio:>14.2f}")
    for key in ("parroting_turns_pct", "parroting_design_pct", "repetition_turns_pct"):
        before, after = (records[v]["content"][key] or 0 for v in VARIANTS)
        print(f"{key.replace('_', ' '):24}{before:>12.1f}{after:>12.1f}")
    for key in ("figures_in_design", "figures_in_spec"):
        print(
            f"{key.replace('_', ' '):24}"
            + "".join(f"{records[v]['content'][key]:>12}" for v in VARIANTS)
        )
    statuses = {v: r["status"] for v, r in records.items()}
    print(f"status: {statuses}")
    if not args.turn_cap and args.model == "embedded":
        old = OLD_ENGINE
        print(
            f"reference, the previous engine (llama-cpp-python, compiled): {old['wall_seconds']:.0f} s, "
            f"{old['input_tokens']:,} input + {old['output_tokens']:,} output tokens; "
            f"after/reference wall time {records['after']['wall_seconds'] / old['wall_seconds']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
