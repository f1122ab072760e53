"""Prompt reuse and determinism of the embedded model, on the calls of a real run.

    flock /tmp/ima-model.lock python -m benchmarks.embedded_replay record calls.jsonl \\
        -- --no-long-term --turn-cap 6 --out /tmp/replay-runs --db /tmp/replay-runs/ima.sqlite
    flock /tmp/ima-model.lock python -m benchmarks.embedded_replay replay calls.jsonl fresh.jsonl
    flock /tmp/ima-model.lock python -m benchmarks.embedded_replay replay calls.jsonl mixed.jsonl \\
        --order shuffled
    python -m benchmarks.embedded_replay compare fresh.jsonl mixed.jsonl

`record` runs `ima run` (arguments after `--`) and writes every model call (the embedded
model's, or the scripted model's for a quick look at the format): its messages, call
metadata, output and token counts. `replay` runs the recorded agent turns and
memory updates again with the same limits: `fresh` evaluates every prompt from scratch in
the recorded order; `recorded` and `shuffled` reuse the prompt cache as a run does, in the
recorded or a shuffled order. `--unaligned` reuses any common prefix, not only whole
64-token blocks (llama.cpp's plain prefix reuse), to show what the alignment prevents.
`compare` counts outputs and first-token probabilities that differ between two replays, and
prints evaluated and cached prompt tokens per call kind. Each replay line says whether the
output equals the recorded run's.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ima.models import llamacpp

# The graph's output limits at the default settings, for recordings without them.
MAX_TOKENS = {"agent_turn": 160, "memory_update": 200}


def _recording(generate: Any, out: Any) -> Any:
    """`generate` (a chat model's `_generate`), writing each call to `out` as it returns."""

    def recording(
        self: Any, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        result = generate(self, messages, stop, run_manager, **kw)
        reply = result.generations[0].message
        labels = run_manager.metadata if run_manager else {}
        line = {
            "meta": {k: v for k, v in labels.items() if k.startswith("ima_")},
            "max_tokens": kw.get("max_tokens", getattr(self, "max_tokens", None)),
            # a memory update's JSON Schema (the grammar of its answer); None for free text
            "response_format": kw.get("response_format"),
            "weights": Path(getattr(self, "model_path", "")).name,
            "messages": [{"type": m.type, "content": m.text} for m in messages],
            "output": reply.content,
            "usage": reply.usage_metadata,
        }
        out.write(json.dumps(line) + "\n")
        out.flush()
        return result

    return recording


def record(path: Path, ima_args: list[str]) -> int:
    """Run `ima run` with `ima_args` in this process, writing each model call to `path`."""
    from ima.cli.app import run_command
    from ima.models.scripted import ScriptedChatModel

    with path.open("w") as out:
        patched = (llamacpp.EmbeddedChatModel, ScriptedChatModel)
        originals = [cls._generate for cls in patched]
        for cls, generate in zip(patched, originals, strict=True):
            cls._generate = _recording(generate, out)  # type: ignore[method-assign]
        try:
            return run_command(["run", *ima_args])
        finally:
            for cls, generate in zip(patched, originals, strict=True):
                cls._generate = generate  # type: ignore[method-assign]


def replay(calls_path: Path, out_path: Path, order: str, seed: int, unaligned: bool) -> None:
    calls = [json.loads(line) for line in calls_path.open()]
    calls = [c for c in calls if c["meta"].get("ima_kind") in MAX_TOKENS]
    if unaligned:
        llamacpp._reusable = lambda cached, tokens: min(  # type: ignore[assignment]
            llamacpp._common_prefix(cached, tokens), len(tokens) - 1
        )
    model = llamacpp.load_embedded()
    engine = llamacpp._engine(model.model_path, model.n_ctx, model.n_threads)
    weights = Path(model.model_path).name
    indices = list(range(len(calls)))
    if order == "shuffled":
        random.Random(seed).shuffle(indices)
    with out_path.open("w") as out:
        for i in indices:
            call = calls[i]
            kind, role = call["meta"]["ima_kind"], call["meta"].get("ima_role")
            messages = [
                SystemMessage(m["content"]) if m["type"] == "system" else HumanMessage(m["content"])
                for m in call["messages"]
            ]
            stream = f"{role}/{kind}"
            if order == "fresh":
                engine.current, stream = [], None  # nothing cached, nothing kept
            params = {
                "temperature": 0.0,
                "max_tokens": call.get("max_tokens") or MAX_TOKENS[kind],
                "seed": 0,
                "repeat_penalty": model.repeat_penalty,
                "logprobs": 5,
            }
            started = time.perf_counter()
            reply = engine.complete([llamacpp._to_message(m) for m in messages], params, stream)
            seconds = time.perf_counter() - started
            choice, timings = reply["choices"][0], reply["timings"]
            top = choice["logprobs"]["content"][0]["top_logprobs"]
            line = {
                "index": i,
                "kind": kind,
                "role": role,
                "weights": weights,
                "prompt_tokens": reply["usage"]["prompt_tokens"],
                "cached_tokens": timings["cache_n"],
                "output_tokens": reply["usage"]["completion_tokens"],
                "seconds": round(seconds, 3),
                "first_token": [(t["token"], t["logprob"]) for t in top],
                "output": choice["text"],
                "same_as_recorded_run": choice["text"] == call["output"],
            }
            out.write(json.dumps(line) + "\n")
            out.flush()


def compare(a_path: Path, b_path: Path) -> None:
    a, b = ({r["index"]: r for r in map(json.loads, p.open())} for p in (a_path, b_path))
    common = sorted(set(a) & set(b))
    texts = sum(a[i]["output"] != b[i]["output"] for i in common)
    probs = sum(a[i]["first_token"] != b[i]["first_token"] for i in common)
    print(f"{len(common)} calls: outputs differ in {texts}, first-token probabilities in {probs}")
    for name, rows in ((a_path.name, a), (b_path.name, b)):  # figures of other weights differ
        print(
            f"{name}: weights {', '.join(sorted({r.get('weights', '-') for r in rows.values()}))}"
        )
    for name, rows in ((a_path.name, a), (b_path.name, b)):
        same = sum(r["same_as_recorded_run"] for r in rows.values())
        print(f"{name}: {same} of {len(rows)} outputs equal the recorded run's")
        kinds: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
        for r in rows.values():
            totals = kinds[r["kind"]]
            totals[0] += r["prompt_tokens"]
            totals[1] += r["cached_tokens"]
            totals[2] += r["seconds"]
        for kind, (prompt, cached, seconds) in sorted(kinds.items()):
            print(
                f"  {kind:14} prompt {prompt:7.0f}  cached {cached:7.0f}  "
                f"evaluated {prompt - cached:7.0f}  {seconds:6.1f} s"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="run `ima run ARGS` and record its model calls")
    rec.add_argument("calls", type=Path)
    rec.add_argument("ima_args", nargs=argparse.REMAINDER)
    rep = commands.add_parser("replay", help="replay recorded agent turns and memory updates")
    rep.add_argument("calls", type=Path)
    rep.add_argument("out", type=Path)
    rep.add_argument("--order", choices=("fresh", "recorded", "shuffled"), default="fresh")
    rep.add_argument("--seed", type=int, default=1)
    rep.add_argument("--unaligned", action="store_true")
    cmp = commands.add_parser("compare", help="count differing outputs of two replays")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.calls, [a for a in args.ima_args if a != "--"])
    if args.command == "replay":
        replay(args.calls, args.out, args.order, args.seed, args.unaligned)
    else:
        compare(args.a, args.b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
