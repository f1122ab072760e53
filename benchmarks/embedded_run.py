"""Whole design meetings on the embedded model, one per variant, compared in one invocation.

A variant is a set of `ima run` flags, optionally run on the code of an earlier commit (a
temporary `git worktree` of it, imported through PYTHONPATH with this checkout's venv; the
path `ima` was imported from is printed, so the old code is seen to run). Every variant runs
in a fresh process, one after the other (never two llama.cpp processes at once), on the same
model, seed 0, temperature 0 and defaults, with long-term memory off. Printed per variant:
wall time, generated tokens and prompt tokens (evaluated anew and served from the prompt cache)
by call kind, the floor of evaluated tokens (`evaluation_floor`), memory-update answers that
reached the output cap and memories stored cut off, repairs, mean retention of the task's key
figures and requirements at the end and over the run (`ima.measures.memory_quality`), and the
content metrics of the final design; then each numeric row's ratio to the first variant. All
metrics are computed by the current code (benchmarks/embedded_measures.py), from each run's
state as its own code wrote it, and printed by benchmarks/embedded_table.py.

    python -m benchmarks.embedded_run                       # the 4 layout variants (8-20 min each)
    python -m benchmarks.embedded_run --variants paper-edit,shared-edit --repeat shared-edit
    python -m benchmarks.embedded_run --variants "rewrite (today),shared-rewrite"
    python -m benchmarks.embedded_run --save results.json   # the figures as JSON too
    python -m benchmarks.embedded_run --model scripted      # a quick check of the benchmark

`--repeat NAME` runs that variant once more, in a fresh process, and says whether every
output (turns, every memory version, the final design and specification) is the same. To
compare something else, add a `Variant` to VARIANTS.

Machines differ up to 3x from day to day, so before each variant a probe measures the
machine's speed on the same model (a fresh prompt of about 1,000 tokens, then 128 generated
tokens, llama.cpp's own timings), and the table adds the wall time scaled to the reference
speed below: wall time x (model time at the reference speed / model time at the probed speed),
where model time is evaluated tokens / prompt speed + generated tokens / generation speed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.embedded_measures import measure, model_outputs
from benchmarks.embedded_table import table
from ima.core.settings import DEFAULT_WEIGHTS

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Variant:
    """One run: its name, its `ima run` flags, and the commit whose code runs it (None: this
    checkout)."""

    name: str
    flags: tuple[str, ...] = ()
    commit: str | None = None


VARIANTS = (
    # The code before bounded memory: free-text rewrites capped at 2 x 100 words' tokens.
    Variant("rewrite (today)", commit="a82f781"),
    # The paper's prompt layout against the shared one, with each way of updating memory.
    Variant("paper-rewrite", ("--prompt-layout", "paper", "--memory-update", "rewrite")),
    Variant("shared-rewrite", ("--prompt-layout", "shared", "--memory-update", "rewrite")),
    Variant("paper-edit", ("--prompt-layout", "paper", "--memory-update", "edit")),
    Variant("shared-edit", ("--prompt-layout", "shared", "--memory-update", "edit")),
)
DEFAULT = tuple(v.name for v in VARIANTS if not v.commit)
# The default model on a quiet 2-core machine (11-30): prompt and generation tokens/s.
REFERENCE_SPEED = (200.0, 47.0)
# The memory update's prompt files: in the library, or in the app before it had one.
MEMORY_PROMPTS = ("library/src/intrinsic_memory/prompts/memory_*.md", "ima/prompts/memory_*.md")


def memory_prompts(source: Path) -> list[str]:
    """The texts of the memory update's prompt files in `source`'s code."""
    files = sorted(p for pattern in MEMORY_PROMPTS for p in source.glob(pattern))
    return [p.read_text(encoding="utf-8") for p in files]


# Run in the variant's own code: its state as that code stored it.
DUMP = """
import json, sys
import ima
from ima.runs.registry import RunRegistry
from ima.runs.runner import load_state
registry = RunRegistry(sys.argv[1])
record = registry.get(sys.argv[2])
registry.close()
values = load_state(record, sys.argv[1])
keys = ("memory_log", "templates", "final", "transcript", "brief")
try:
    import intrinsic_memory
    library = intrinsic_memory.__file__
except ImportError:  # code from before the library
    library = None
code = {"ima": ima.__file__, "library": library}
# the memories under the key of the code that ran (before 12-06: "memories")
memories = values.get("intrinsic_memory") or values.get("memories")
state = {**code, **{k: values.get(k) for k in keys}, "memories": memories}
print(json.dumps(state, default=str))
"""


# The machine's speed now, in a fresh process: llama.cpp's timings of about 1,000 prompt
# tokens evaluated from scratch, then of 128 tokens generated, and the weights file measured
# (figures from different weights are never mixed).
PROBE = """
import json, sys
from pathlib import Path
from langchain_core.messages import HumanMessage
from ima.core.tokens import count_tokens
from ima.models.llamacpp import load_embedded
path, weights = sys.argv[1] or None, sys.argv[2]
model = load_embedded(path, weights)
words = "camera lidar radar depot upload safety budget storage region retention".split()
text = " ".join(words[i * 7 % len(words)] for i in range(1200))
while count_tokens(text) > 1000:
    text = text.rsplit(" ", 20)[0]
timings = lambda **kw: model.invoke([HumanMessage(text)], **kw).response_metadata["timings"]
prompt = timings(max_tokens=1)
generation = timings(max_tokens=128, ignore_eos=True)
speeds = [prompt["prompt_per_second"], generation["predicted_per_second"]]
print(json.dumps(speeds + [Path(model.model_path).name]))
"""


def probe_speed(
    model: str, flags: Sequence[str] = (), weights: str = DEFAULT_WEIGHTS
) -> tuple[float, float, str] | None:
    """Prompt and generation tokens/s of an in-process model (`embedded` or `gguf:PATH`,
    with the `weights`, or those a run's `flags` choose) on this machine now, and the name of
    the weights file they were measured on."""
    if model != "embedded" and not model.startswith("gguf:"):
        return None
    path = model.removeprefix("gguf:") if model.startswith("gguf:") else ""
    weights = flags[flags.index("--weights") + 1] if "--weights" in flags else weights
    prompt, generation, name = json.loads(python(ROOT, "-c", PROBE, path, weights))
    return prompt, generation, name


def at_reference_speed(figures: dict[str, Any], speed: tuple[float, float] | None) -> Any:
    """The run's wall time scaled to REFERENCE_SPEED (see the module's docstring)."""
    if speed is None:
        return None

    def model_seconds(prompt: float, generation: float) -> float:
        return figures["evaluated"] / prompt + figures["generated"] / generation

    return figures["wall_seconds"] * model_seconds(*REFERENCE_SPEED) / model_seconds(*speed[:2])


def environment(source: Path) -> dict[str, str]:
    """The variant's code first on the path: the app and, where it has one, its library."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMA_")}
    path = os.pathsep.join(str(p) for p in (source, source / "library" / "src") if p.exists())
    return env | {"IMA_CONFIG": os.devnull, "PYTHONPATH": path}


def python(source: Path, *args: str) -> str:
    """Run this venv's Python on `source`'s code (its folder first on the path); stdout."""
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=source,
        env=environment(source),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"`python {' '.join(args[:4])}` failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def run(
    variant: Variant, source: Path, tmp: Path, turn_cap: int | None, model: str
) -> dict[str, Any]:
    """The variant's run record, its state (as its code stored it) and its code's path."""
    thread = "".join(c if c.isalnum() else "-" for c in variant.name).strip("-")
    db = str(tmp / f"{thread}.sqlite")
    args = ["run", "--no-long-term", "--json", "--seed", "0", "--thread", thread, "--db", db]
    args += ["--out", str(tmp / "runs"), "--model", model, *variant.flags]
    args += ["--turn-cap", str(turn_cap)] if turn_cap else []
    record = json.loads(python(source, "-m", "ima", *args))
    state = json.loads(python(source, "-c", DUMP, db, thread))
    # Code from before the library has none of its own (the installed one is not used).
    library = state.get("library") if (source / "library").exists() else None
    for path in (state["ima"], library):
        if path and not Path(path).resolve().is_relative_to(source.resolve()):
            raise SystemExit(f"{variant.name}: ran {path}, not the code in {source}")
    return {"record": record, "state": state, "memory_prompts": memory_prompts(source)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embedded_run")
    parser.add_argument("--turn-cap", type=int, help="shorter runs (default: whole meetings)")
    parser.add_argument(
        "--variants",
        help=f"comma-separated names to run, of: {', '.join(v.name for v in VARIANTS)} "
        f"(default: {', '.join(DEFAULT)})",
    )
    parser.add_argument("--repeat", help="run this variant again and compare every output")
    parser.add_argument("--save", type=Path, help="also write every figure to this JSON file")
    parser.add_argument(
        "--model", default="embedded", help="model of every run (scripted: a quick check)"
    )
    args = parser.parse_args(argv)
    wanted = [w.strip() for w in args.variants.split(",")] if args.variants else list(DEFAULT)
    unknown = [
        w for w in [*wanted, args.repeat or DEFAULT[0]] if w not in {v.name for v in VARIANTS}
    ]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}")
    chosen = [next(v for v in VARIANTS if v.name == w) for w in wanted]  # in the order given
    if args.repeat:
        again = next(v for v in VARIANTS if v.name == args.repeat)
        chosen.append(Variant(f"{again.name} again", again.flags, again.commit))
    outputs: list[Any] = []
    figures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ima-embedded-") as tmp:
        for variant in chosen:
            source = ROOT
            if variant.commit:
                source = Path(tmp) / f"src-{variant.commit}"
                subprocess.run(
                    ["git", "worktree", "add", "--detach", str(source), variant.commit],
                    cwd=ROOT,
                    check=True,
                    capture_output=True,
                )
            # code from before the weights setting runs the bundled file
            bundled = "q4_k_m" if variant.commit else DEFAULT_WEIGHTS
            speed = probe_speed(args.model, variant.flags, bundled)
            try:
                result = run(variant, source, Path(tmp), args.turn_cap, args.model)
            finally:
                if variant.commit:
                    subprocess.run(
                        ["git", "worktree", "remove", "--force", str(source)],
                        cwd=ROOT,
                        check=False,
                        capture_output=True,
                    )
            print(
                f"{variant.name}: {' '.join(variant.flags) or 'defaults'}, ima from "
                f"{result['state']['ima']}",
                file=sys.stderr,
            )
            measured = measure(result)
            probed = speed[2] if speed else "-"
            if speed and probed != measured["weights"]:  # never scale by other weights' speed
                print(
                    f"{variant.name}: probed {probed}, ran {measured['weights']}", file=sys.stderr
                )
                speed = None
            measured |= {
                "speed": speed,
                "probe_weights": probed,
                "reference_seconds": at_reference_speed(measured, speed),
            }
            figures.append(
                {"variant": variant.name, "flags": list(variant.flags), "commit": variant.commit}
                | measured
            )
            outputs.append(model_outputs(result["state"]))
    print(table([v.name for v in chosen], figures))
    if args.repeat:
        same = outputs[-1] == outputs[[v.name for v in chosen].index(args.repeat)]
        figures[-1]["outputs_identical"] = same
        print(f"{args.repeat} run twice: outputs {'identical' if same else 'DIFFERENT'}")
    if args.save:
        args.save.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
