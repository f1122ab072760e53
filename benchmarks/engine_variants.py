"""llama.cpp engine options for the embedded model, side by side, on the calls of a real run.

Each variant loads the weights in a fresh process with some options changed (a module
constant of ima/models/llamacpp.py, the thread count, or no grammar for JSON answers) and
replays the same recorded agent turns and memory updates, one after the other, every
prompt evaluated from scratch, greedy, with each call's recorded output cap. The calls come
from `benchmarks.embedded_replay record`, which keeps each memory update's JSON Schema:

    flock LOCK python -m benchmarks.embedded_replay record calls.jsonl -- --weights q4_k_m \\
        --no-long-term --turn-cap 10 --out /tmp/rec --db /tmp/rec/ima.sqlite
    flock LOCK python -m benchmarks.engine_variants calls.jsonl --variants default,flash-off
    flock LOCK python -m benchmarks.engine_variants calls.jsonl --weights q4_k_m --variants ...

The variants run in `--rounds` interleaved rounds, and each call counts with its fastest
round: on a shared machine other processes only ever slow a call down. Printed per variant:
prompt and generated tokens per second (llama.cpp's own timings, summed over the calls), the
wall time of the calls, how many outputs are identical to the first variant's and the same
in every round (greedy decoding is deterministic: a different output is a different
computation, not noise), and for the memory updates the share of answers valid under their
schema and the share the library can use (its tolerant reading and repairs); then each
speed's ratio to the first variant, measured in the same invocation. Machines differ from
day to day: compare ratios, not figures of different invocations.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.embedded_measures import short_name
from benchmarks.embedded_run import ROOT, python
from ima.core.settings import DEFAULT_WEIGHTS

# Module constants of ima/models/llamacpp.py and other options, by variant name.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    # memory updates answer in JSON asked for in the prompt alone, read tolerantly
    "no-grammar": {"grammar": False},
    "flash-on": {"FLASH_ATTENTION": "on"},
    "flash-off": {"FLASH_ATTENTION": "off"},
    # a quantized V cache needs flash attention
    "kv-q8_0": {"KV_CACHE": "q8_0", "FLASH_ATTENTION": "on"},
    # more tokens per decode call, still computed BLOCK (64) at a time
    "batch-512": {"BATCH": 512},
    # larger blocks: fewer, bigger matrix products (and coarser prefix reuse in a run)
    "block-128": {"BLOCK": 128, "BATCH": 128},
    "block-256": {"BLOCK": 256, "BATCH": 256},
    "threads-1": {"threads": 1},
}
KINDS = ("agent_turn", "memory_update")


def load_calls(path: Path, take: int) -> list[dict[str, Any]]:
    """`take` recorded agent turns and as many memory updates, spread evenly over the run
    (its first and last of each kind among them), in the recorded order."""
    calls = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    chosen: set[int] = set()
    for kind in KINDS:
        found = [i for i, c in enumerate(calls) if c["meta"].get("ima_kind") == kind]
        if not found:
            raise SystemExit(f"{path} holds no {kind}")
        n = min(take, len(found))
        chosen |= {found[round(j * (len(found) - 1) / max(n - 1, 1))] for j in range(n)}
    if not any(c.get("response_format") for c in calls):
        raise SystemExit(f"{path} has no memory update schema: record it again with this code")
    return [calls[i] for i in sorted(chosen)]


def worker(variant: str, calls_path: Path, weights: str, take: int) -> None:
    """In a fresh process: the variant's engine replays every call; one JSON line each."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from ima.models import llamacpp
    from ima.models.weights import ensure_weights

    options = dict(VARIANTS[variant])
    grammar = options.pop("grammar", True)
    threads = options.pop("threads", None) or llamacpp._cpu_count()
    for name, value in options.items():
        setattr(llamacpp, name, value)
    path = Path(weights) if weights.endswith(".gguf") else ensure_weights(weights)  # type: ignore[arg-type]
    model = llamacpp.EmbeddedChatModel(model_path=str(path), n_threads=threads)
    engine = llamacpp._engine(model.model_path, model.n_ctx, threads)
    print(json.dumps({"weights": path.name}), flush=True)
    for call in load_calls(calls_path, take):
        messages = [
            SystemMessage(m["content"]) if m["type"] == "system" else HumanMessage(m["content"])
            for m in call["messages"]
        ]
        params: dict[str, Any] = {  # as EmbeddedChatModel._generate sends them
            "temperature": model.temperature,
            "top_p": model.top_p,
            "max_tokens": call["max_tokens"] or model.max_tokens,
            "seed": model.seed,
            "repeat_penalty": model.repeat_penalty,
        }
        if call.get("response_format") and grammar:
            params["response_format"] = call["response_format"]
        engine.current = []  # evaluated from scratch: nothing cached, nothing kept
        started = time.perf_counter()
        reply = engine.complete(
            [llamacpp._to_message(m) for m in messages],
            llamacpp._completion_params(params),
            None,
        )
        seconds = time.perf_counter() - started
        timings = reply["timings"]
        line = {
            "kind": call["meta"]["ima_kind"],
            "prompt_n": timings["prompt_n"],
            "prompt_ms": timings["prompt_ms"],
            "predicted_n": timings["predicted_n"],
            "predicted_ms": timings["predicted_ms"],
            "seconds": seconds,
            "output": reply["choices"][0].get("text") or "",
            "cut_off": reply["choices"][0].get("finish_reason") == "length",
        }
        print(json.dumps(line), flush=True)


def schema_of(call: dict[str, Any]) -> dict[str, Any]:
    return (call.get("response_format") or {}).get("schema") or {}


def answer_quality(output: str, schema: dict[str, Any]) -> tuple[bool, bool]:
    """Whether a memory update's answer is valid JSON under its schema, and whether the
    library can use it: the memory manager reads it tolerantly and repairs it, as in a run
    (through its public API, the recorded answer standing in for the model)."""
    import jsonschema
    from intrinsic_memory import IntrinsicMemory, MemoryTemplate
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    try:
        jsonschema.validate(json.loads(output), schema)
        valid = True
    except (json.JSONDecodeError, jsonschema.ValidationError):
        valid = False
    properties = schema.get("properties", {})
    if "edits" in properties:
        keys = properties["edits"]["items"]["anyOf"][0]["properties"]["to"]["enum"]
    else:
        keys = properties["notes"]["items"]["properties"]["section"]["enum"]
    edits = "edits" in properties
    template = MemoryTemplate.from_markdown("\n".join(f"## {key}" for key in keys))
    mode = "edit" if edits else "rewrite"
    memory = IntrinsicMemory(FakeListChatModel(responses=[output]), template, mode=mode)
    # edits apply to a memory that has notes (an empty one is written whole, as notes)
    held = "\n".join(f"## {key}\n- A note kept from before." for key in keys) if edits else ""
    with contextlib.redirect_stderr(io.StringIO()):  # its line on the stand-in's JSON mode
        result = memory.update(held, "The recorded turn, with words the memory lacks.")
    return valid, not result.repairs.unusable


def best_of(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each call's fastest prompt, generation and wall time over the rounds (other processes
    only ever slow a call down), its first round's output, and whether every round gave it."""
    merged = []
    for runs in zip(*rounds, strict=True):
        row = dict(runs[0])
        for key in ("prompt_ms", "predicted_ms", "seconds"):
            row[key] = min(r[key] for r in runs)
        row["repeatable"] = all(r["output"] == row["output"] for r in runs)
        merged.append(row)
    return merged


def summary(rows: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A variant's figures from its calls' lines."""

    def rate(n: str, ms: str, kind: str | None = None) -> float:
        chosen = [r for r in rows if kind in (None, r["kind"])]
        return 1000 * sum(r[n] for r in chosen) / max(sum(r[ms] for r in chosen), 1e-9)

    updates = [
        answer_quality(r["output"], schema_of(c))
        for r, c in zip(rows, calls, strict=True)
        if r["kind"] == "memory_update"
    ]
    figures = {
        "prompt tok/s": rate("prompt_n", "prompt_ms"),
        "generated tok/s": rate("predicted_n", "predicted_ms"),
        "wall s": sum(r["seconds"] for r in rows),
        "prompt tokens": sum(r["prompt_n"] for r in rows),
        "generated tokens": sum(r["predicted_n"] for r in rows),
    }
    for kind in KINDS:
        figures[f"  {kind} generated tok/s"] = rate("predicted_n", "predicted_ms", kind)
        figures[f"  {kind} wall s"] = sum(r["seconds"] for r in rows if r["kind"] == kind)
    figures["JSON valid (%)"] = 100 * sum(v for v, _ in updates) / max(len(updates), 1)
    figures["JSON usable (%)"] = 100 * sum(u for _, u in updates) / max(len(updates), 1)
    return figures


RATIOS = ("prompt tok/s", "generated tok/s", "wall s")


def table(names: list[str], results: list[dict[str, Any]]) -> str:
    width = max(12, *(len(n) + 2 for n in names))
    lines = [f"{'':32}" + "".join(f"{n:>{width}}" for n in names)]
    for key in results[0]["figures"]:
        values = [r["figures"][key] for r in results]
        lines.append(f"{key:32}" + "".join(f"{v:>{width},.1f}" for v in values))
        if key in RATIOS:
            ratios = [v / values[0] if values[0] else 0 for v in values]
            lines.append(
                f"{'  ratio to ' + names[0]:32}" + "".join(f"{r:>{width}.2f}" for r in ratios)
            )
    for label, key in (
        ("outputs identical to " + names[0], "identical"),
        ("  and every round", "repeatable"),
    ):
        counts = [f"{r[key]}/{r['calls']}" for r in results]
        lines.append(f"{label:32}" + "".join(f"{c:>{width}}" for c in counts))
    lines.append(
        f"{'weights':32}" + "".join(f"{short_name(r['weights']):>{width}}" for r in results)
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_variants")
    parser.add_argument("calls", type=Path, help="calls recorded by benchmarks.embedded_replay")
    parser.add_argument(
        "--variants",
        default="default,no-grammar",
        help=f"comma-separated, the first is the reference; of: {', '.join(VARIANTS)}",
    )
    parser.add_argument(
        "--weights",
        default=DEFAULT_WEIGHTS,
        help="q4_0, q4_k_m (the embedded model's) or a .gguf path",
    )
    parser.add_argument(
        "--take", type=int, default=2, help="agent turns, and memory updates, replayed (each)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="runs of each variant, interleaved (best of)"
    )
    parser.add_argument("--save", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.calls, args.weights, args.take)
        return 0
    names = [n.strip() for n in args.variants.split(",")]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}: use {', '.join(VARIANTS)}")
    calls = load_calls(args.calls, args.take)
    weights = str(Path(args.weights).resolve()) if args.weights.endswith(".gguf") else args.weights
    results = [{"variant": name, "rounds": []} for name in names]
    for round_ in range(1, args.rounds + 1):  # interleaved: a busy minute hits every variant
        for result in results:
            out = python(
                ROOT,
                "-m",
                "benchmarks.engine_variants",
                str(args.calls.resolve()),
                "--weights",
                weights,
                "--take",
                str(args.take),
                "--worker",
                result["variant"],
            )
            head, *rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            result["weights"] = head["weights"]
            result["rounds"].append(rows)
            print(
                f"round {round_}, {result['variant']}: {len(rows)} calls on {head['weights']}",
                file=sys.stderr,
                flush=True,
            )
    for result in results:
        result["rows"] = best_of(result["rounds"])
    reference = [r["output"] for r in results[0]["rows"]]
    for result in results:
        outputs = [r["output"] for r in result["rows"]]
        result["identical"] = sum(a == b for a, b in zip(outputs, reference, strict=True))
        result["repeatable"] = sum(r["repeatable"] for r in result["rows"])
        result["calls"] = len(outputs)
        result["figures"] = summary(result["rows"], calls)
    print(table(names, results))
    if args.save:
        args.save.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
