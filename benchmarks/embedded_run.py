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
metrics are computed here, by the current code, from each run's state as its own code wrote it.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ima.core.settings import DEFAULT_WEIGHTS
from ima.models.weights import DEFAULT_MODEL_FILE

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
KINDS = ("agent_turn", "memory_update", "template_generation", "documentation")
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
keys = ("memory_log", "templates", "final", "transcript", "brief", "memories")
try:
    import intrinsic_memory
    library = intrinsic_memory.__file__
except ImportError:  # code from before the library
    library = None
code = {"ima": ima.__file__, "library": library}
print(json.dumps({**code, **{k: values.get(k) for k in keys}}, default=str))
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


def weights_of(record: dict[str, Any]) -> str:
    """The weights file a run loaded: as its record names it; records from before name
    none, and their `embedded` model was the bundled Q4_K_M file. "-": not a weights file."""
    settings = record.get("settings") or {}
    model = settings.get("model", "")
    if settings.get("weights_file"):
        return settings["weights_file"]
    if model.startswith("gguf:"):
        return Path(model.removeprefix("gguf:")).name
    if model == "embedded" and "weights" not in settings:
        return DEFAULT_MODEL_FILE
    return "-"


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


def model_outputs(state: dict[str, Any]) -> Any:
    """Everything the model wrote in a run: turns, memory versions, design, specification."""
    final = state.get("final") or {}
    return (
        [t["content"] for t in state.get("transcript") or []],
        [e["text"] for e in state.get("memory_log") or []],
        final.get("markdown"),
        final.get("spec"),
    )


def answers_at_cap(record: dict[str, Any], log: list[dict[str, Any]]) -> tuple[int, int]:
    """Memory-update answers that stopped at the output cap, and memories stored cut off:
    code that records repairs stores a cut answer only after repairing it (its complete
    sections kept, the rest carried over); older code stored every answer as it came."""
    settings = record.get("settings") or {}
    cap = 2 * settings["max_memory_words"] if "max_memory_words" in settings else None
    at_cap = stored = 0
    for entry in log:
        if not entry.get("version"):
            continue
        output = (entry.get("usage") or {}).get("output_tokens", 0)
        cut = entry["cut_off"] if "cut_off" in entry else bool(cap and output >= cap)
        repaired = entry.get("repairs") or {}
        at_cap += cut
        stored += cut and not (repaired.get("carried_sections") or repaired.get("unusable"))
    return at_cap, stored


def evaluation_floor(record: dict[str, Any], state: dict[str, Any]) -> dict[str, int] | None:
    """Prompt tokens that no prefix cache can avoid for the contexts a shared-layout run built
    (None for other layouts): every agent turn's own parts (role, question, memory: they
    follow the newest turn), each turn's text and the task once; every memory update's
    previous memory and latest turn. A lower bound: no window slides, no block edges, and
    documentation not counted. Token counts are the token budget's."""
    from ima.core.tokens import count_tokens

    if (record.get("settings") or {}).get("prompt_layout") != "shared":
        return None
    transcript = state.get("transcript") or []
    shares = [t["context"] for t in transcript if "context" in t]  # a person's turn has none
    turns = max(s["task"] for s in shares) if shares else 0
    turns += sum(s["role"] + s["instruction"] + s["memory"] for s in shares)
    turns += sum(t["tokens"] for t in transcript[:-1])  # the last turn is never read
    updates, memory = 0, {}
    for entry in state.get("memory_log") or []:
        if entry.get("version"):
            latest = transcript[entry["turn"] - 1]["content"]
            updates += count_tokens(memory.get(entry["role"], "")) + count_tokens(latest)
        memory[entry["role"]] = entry["text"]
    return {"agent_turn": turns, "memory_update": updates}


def measure(result: dict[str, Any]) -> dict[str, Any]:
    """Every printed figure of one variant's run."""
    from ima.evals.coverage import evidence_coverage
    from ima.measures.content import content_metrics
    from ima.measures.in_view import in_view_at_last_turn
    from ima.measures.memory_quality import (
        memory_prompt_sources,
        repair_totals,
        retention_by_agent,
        retention_summary,
    )
    from ima.tasks import load_task

    record, state = result["record"], result["state"]
    task = load_task(record["task"]["id"])
    log = state.get("memory_log") or []
    templates = state.get("templates") or {}
    sources = memory_prompt_sources(templates.values(), result["memory_prompts"])
    retention = retention_summary(retention_by_agent(task, log, templates, sources))
    final = state.get("final") or {}
    design, spec = final.get("markdown", ""), final.get("spec")
    content = content_metrics(
        task,
        design=design,
        spec=spec,
        turns=state.get("transcript") or [],
        brief=state.get("brief"),
        templates=templates,
        memories=state.get("memories"),
    )
    at_cap, stored = answers_at_cap(record, log)
    quality = content.get("design") or {}
    hygiene = content.get("memory_hygiene") or {}
    in_view = in_view_at_last_turn(task, state)
    usage = record["usage"]
    figures = {
        "wall_seconds": record["wall_seconds"],
        "turns": record["turns"],
        "generated": usage["total"]["output_tokens"],
        "evaluated": usage["total"]["input_tokens"] - usage["total"].get("cached_tokens", 0),
        "cached": usage["total"].get("cached_tokens", 0),
        "memory_updates": sum(1 for e in log if e.get("version")),
        "answers_at_cap": at_cap,
        "stored_cut_off": stored,
        "repairs": repair_totals(log),
        "retention_end": _pct(retention["end"]),
        "retention_over_run": _pct(retention["over_run"]),
        "own_retention_end": _pct(retention.get("own_end")),
        "in_view_last_turn": _pct(in_view["mean"]),
        "memory_parroting": _pct(retention["parroting"]),
        "figures_in_design": len(content["grounding"]["in_design"]),
        "figures_in_spec": len(content["grounding"]["in_spec"]),
        "coverage": _pct(evidence_coverage(task, design, spec)["score"]),
        "parroting_design": _pct(content["parroting"]["design"]),
        "design_bytes": len(design.encode()),
        "junk_lines": len(quality.get("junk_lines", [])),
        "components_justified": quality.get("components_justified"),
        "requirements_addressed": len(quality["addressed"]) if "addressed" in quality else None,
        "requirements_open": len(quality["requirements_open"]) if "addressed" in quality else None,
        "unit_errors": len(quality["unit_errors"]) if "addressed" in quality else None,
        "figure_conflicts": len(content["grounding"]["conflicts"]),
        "memory_restated_pairs": hygiene.get("restated_pairs"),
        "memory_notes": hygiene.get("notes"),
        "memory_foreign_script": hygiene.get("foreign_script"),
        "consensus": int(record["status"] == "finalized"),
        "design_missing": final.get("missing", []),
        "spec_valid": bool(final.get("valid")),
        "status": record["status"],
        "handoff": record.get("handoff", ""),
        "weights": weights_of(record),
    }
    floor = evaluation_floor(record, state) or {}
    figures["floor"] = sum(floor.values()) if floor else None
    for kind in KINDS:
        figures[f"floor {kind}"] = floor.get(kind)
        u = usage["by_kind"].get(kind) or {}
        figures[f"generated {kind}"] = u.get("output_tokens", 0)
        figures[f"evaluated {kind}"] = u.get("input_tokens", 0) - u.get("cached_tokens", 0)
        figures[f"cached {kind}"] = u.get("cached_tokens", 0)
        figures[f"seconds {kind}"] = u.get("seconds", 0.0)
    return figures


def _pct(value: float | None) -> float | None:
    return None if value is None else 100 * value


Row = tuple[str, Callable[[dict[str, Any]], Any], str]


def rows() -> list[Row]:
    """Label, value, format of every printed row."""
    out: list[Row] = [
        ("wall time (s)", lambda f: f["wall_seconds"], ",.0f"),
        ("  at the reference speed (s)", lambda f: f["reference_seconds"], ",.0f"),
        ("machine: prompt tokens/s", lambda f: (f["speed"] or [None])[0], ",.0f"),
        ("machine: generated tokens/s", lambda f: (f["speed"] or [None, None])[1], ",.1f"),
        ("turns", lambda f: f["turns"], ",.0f"),
        ("generated tokens", lambda f: f["generated"], ",.0f"),
    ]
    out += [(f"  {k}", lambda f, k=k: f[f"generated {k}"], ",.0f") for k in KINDS]
    out += [("prompt tokens evaluated", lambda f: f["evaluated"], ",.0f")]
    out += [(f"  {k}", lambda f, k=k: f[f"evaluated {k}"], ",.0f") for k in KINDS]
    out += [("  floor (turns, memory updates)", lambda f: f["floor"], ",.0f")]
    out += [(f"    {k}", lambda f, k=k: f[f"floor {k}"], ",.0f") for k in KINDS[:2]]
    out += [("prompt tokens cached", lambda f: f["cached"], ",.0f")]
    out += [(f"  {k}", lambda f, k=k: f[f"cached {k}"], ",.0f") for k in KINDS]
    out += [(f"seconds {k}", lambda f, k=k: f[f"seconds {k}"], ",.0f") for k in KINDS]
    out += [
        ("memory updates", lambda f: f["memory_updates"], ",.0f"),
        ("  answers at the output cap", lambda f: f["answers_at_cap"], ",.0f"),
        ("  memories stored cut off", lambda f: f["stored_cut_off"], ",.0f"),
        ("  sections carried over", lambda f: f["repairs"]["carried_sections"], ",.0f"),
        ("  notes shortened", lambda f: f["repairs"]["shortened_notes"], ",.0f"),
        ("  notes dropped", lambda f: f["repairs"]["dropped_notes"], ",.0f"),
        ("  malformed edits", lambda f: f["repairs"]["malformed_edits"], ",.0f"),
        ("  unusable answers", lambda f: f["repairs"]["unusable"], ",.0f"),
        ("retention at the end (%)", lambda f: f["retention_end"], ",.1f"),
        ("retention over the run (%)", lambda f: f["retention_over_run"], ",.1f"),
        ("own items retained at the end (%)", lambda f: f["own_retention_end"], ",.1f"),
        ("own items in view, last turn (%)", lambda f: f["in_view_last_turn"], ",.1f"),
        ("memory parroting prompt (%)", lambda f: f["memory_parroting"], ",.1f"),
        ("design: figures stated", lambda f: f["figures_in_design"], ",.0f"),
        ("spec: figures stated", lambda f: f["figures_in_spec"], ",.0f"),
        ("requirement coverage (%)", lambda f: f["coverage"], ",.1f"),
        ("design parroting (%)", lambda f: f["parroting_design"], ",.1f"),
        ("design.md bytes", lambda f: f["design_bytes"], ",.0f"),
    ]
    return out


def short_name(weights: str) -> str:
    """A weights file's name without what the bundled model's files share."""
    return weights.removeprefix(DEFAULT_MODEL_FILE.rsplit("-", 1)[0] + "-")


def table(names: list[str], figures: list[dict[str, Any]]) -> str:
    """Values per variant (numbered), then each one's ratio to the first ("2/1")."""
    width = max(14, *(len(n) + 5 for n in names))
    head = f"{'':30}" + "".join(f"{f'{i}. {n}':>{width}}" for i, n in enumerate(names, 1))
    head += "".join(f"{f'{i}/1':>8}" for i in range(2, len(names) + 1))
    lines = [head]
    for label, get, fmt in rows():
        values = [get(f) for f in figures]
        cells = "".join(f"{'n/a' if v is None else format(v, fmt):>{width}}" for v in values)
        first = values[0]
        for v in values[1:]:
            ratio = v / first if first and v is not None else None
            cells += f"{'' if ratio is None else f'{ratio:.2f}':>8}"
        lines.append(f"{label:30}{cells}")
    for key in ("weights", "status", "spec_valid", "design_missing"):
        shown = [short_name(f[key]) if key == "weights" else f[key] for f in figures]
        lines.append(f"{key:30}" + "".join(f"{v!s:>{width}}" for v in shown))
    return "\n".join(lines)


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
