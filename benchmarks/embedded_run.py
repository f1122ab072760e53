"""Whole design meetings on the embedded model, one per variant, compared in one invocation.

A variant is a set of `ima run` flags: today's prompt layout (`paper`) against the shared
one, each with rewrite and edit memory. Every variant runs in a fresh process, one after the
other (never two llama.cpp processes at once), on the same model, seed 0, temperature 0 and
defaults, with long-term memory off. Printed per variant: wall time, turns, generated tokens
and prompt tokens evaluated (not served from the prompt cache) and cached, per call kind, the
final design's content metrics (`ima show`), then each row's ratio to the first variant.
`--repeat NAME` runs that variant once more and says whether every output (turns, memories,
the final design and specification) is the same.

    python -m benchmarks.embedded_run                                   # 4 meetings, 8-20 min each
    python -m benchmarks.embedded_run --variants paper-edit,shared-edit --repeat shared-edit
    python -m benchmarks.embedded_run --turn-cap 6 --model scripted     # a quick check
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VARIANTS: dict[str, tuple[str, ...]] = {
    "paper-rewrite": ("--prompt-layout", "paper", "--memory-update", "rewrite"),
    "shared-rewrite": ("--prompt-layout", "shared", "--memory-update", "rewrite"),
    "paper-edit": ("--prompt-layout", "paper", "--memory-update", "edit"),
    "shared-edit": ("--prompt-layout", "shared", "--memory-update", "edit"),
}
KINDS = ("agent_turn", "memory_update", "documentation")


def ima(*args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    env["IMA_CONFIG"] = os.devnull
    command = [sys.executable, "-m", "ima", *args]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"`ima {' '.join(args)}` failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def run(thread: str, flags: tuple[str, ...], tmp: Path, turn_cap: int | None, model: str) -> dict:
    """The run record, with what `ima show` gives (outputs and content metrics)."""
    db = ["--db", str(tmp / "ima.sqlite")]
    args = ["run", "--no-long-term", "--json", "--seed", "0", "--thread", thread, *db]
    args += ["--out", str(tmp / "runs"), "--model", model, *flags]
    record = ima(*args, *(["--turn-cap", str(turn_cap)] if turn_cap else []))
    return record | {"show": ima("show", thread, "--json", *db)}


def outputs(result: dict[str, Any]) -> Any:
    """Everything the model wrote: turns, memories, the final design and specification."""
    show = result["show"]
    final = show.get("final") or {}
    return (
        [t["content"] for t in show["transcript"]],
        {role: m["text"] for role, m in show["memories"].items()},
        final.get("markdown"),
        final.get("spec"),
    )


def evaluated(usage: dict[str, Any]) -> int:
    return usage.get("input_tokens", 0) - usage.get("cached_tokens", 0)


def _figures(text: str) -> int:
    return int(str(text).split("/")[0])


Row = tuple[str, Callable[[dict[str, Any]], float], str]


def rows() -> list[Row]:
    def kind(r: dict[str, Any], k: str) -> dict[str, Any]:
        return r["usage"]["by_kind"].get(k) or {}

    out: list[Row] = [
        ("wall time (s)", lambda r: r["wall_seconds"], ",.0f"),
        ("turns", lambda r: r["turns"], ",.0f"),
        ("generated tokens", lambda r: r["usage"]["total"]["output_tokens"], ",.0f"),
    ]
    out += [(f"  {k}", lambda r, k=k: kind(r, k).get("output_tokens", 0), ",.0f") for k in KINDS]
    out += [("prompt tokens evaluated", lambda r: evaluated(r["usage"]["total"]), ",.0f")]
    out += [(f"  {k}", lambda r, k=k: evaluated(kind(r, k)), ",.0f") for k in KINDS]
    out += [("prompt tokens cached", lambda r: r["usage"]["total"].get("cached_tokens", 0), ",.0f")]
    out += [(f"  {k}", lambda r, k=k: kind(r, k).get("cached_tokens", 0), ",.0f") for k in KINDS]
    out += [(f"seconds {k}", lambda r, k=k: kind(r, k).get("seconds", 0.0), ",.0f") for k in KINDS]
    content = lambda r: r["show"]["content"]  # noqa: E731
    out += [
        ("design: figures stated", lambda r: _figures(content(r)["figures_in_design"]), ",.0f"),
        ("spec: figures stated", lambda r: _figures(content(r)["figures_in_spec"]), ",.0f"),
        ("turns parroting (%)", lambda r: content(r)["parroting_turns_pct"] or 0.0, ",.1f"),
        ("design parroting (%)", lambda r: content(r)["parroting_design_pct"] or 0.0, ",.1f"),
        ("turns repeating (%)", lambda r: content(r)["repetition_turns_pct"] or 0.0, ",.1f"),
    ]
    return out


def table(names: list[str], results: list[dict[str, Any]]) -> str:
    """Values per variant (numbered), then each one's ratio to the first ("2/1")."""
    width = max(14, *(len(n) + 5 for n in names))
    head = f"{'':26}" + "".join(f"{f'{i}. {n}':>{width}}" for i, n in enumerate(names, 1))
    lines = [head + "".join(f"{f'{i}/1':>7}" for i in range(2, len(names) + 1))]
    for label, get, fmt in rows():
        values = [get(r) for r in results]
        cells = "".join(f"{format(v, fmt):>{width}}" for v in values)
        cells += "".join(f"{v / values[0]:>7.2f}" if values[0] else f"{'':>7}" for v in values[1:])
        lines.append(f"{label:26}{cells}")
    lines.append(f"{'status':26}" + "".join(f"{r['status']:>{width}}" for r in results))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embedded_run")
    parser.add_argument("--turn-cap", type=int, help="shorter runs (default: whole meetings)")
    parser.add_argument(
        "--variants", help=f"comma-separated names (default: all: {', '.join(VARIANTS)})"
    )
    parser.add_argument("--repeat", help="run this variant again and compare every output")
    parser.add_argument("--model", default="embedded", help="model of every run")
    parser.add_argument("--save", type=Path, help="also write every run record to this file")
    args = parser.parse_args(argv)
    names = list(VARIANTS)
    if args.variants:
        names = [n.strip() for n in args.variants.split(",")]
    unknown = [n for n in [*names, *([args.repeat] if args.repeat else [])] if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}: use {', '.join(VARIANTS)}")
    runs = [(n, n) for n in names] + (
        [(f"{args.repeat} (again)", args.repeat)] if args.repeat else []
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="ima-embedded-") as tmp:
        for i, (label, name) in enumerate(runs):
            print(f"{label}: {' '.join(VARIANTS[name])}", file=sys.stderr, flush=True)
            results.append(run(f"v{i}", VARIANTS[name], Path(tmp), args.turn_cap, args.model))
    print(table([label for label, _ in runs], results))
    if args.repeat:
        first = results[[label for label, _ in runs].index(args.repeat)]
        same = outputs(first) == outputs(results[-1])
        print(f"{args.repeat} run twice: outputs {'identical' if same else 'DIFFERENT'}")
    if args.save:
        saved = [{"variant": label} | r for (label, _), r in zip(runs, results, strict=True)]
        args.save.write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
