"""The documentation step alone, replayed on a stored meeting: the design compiled from the
meeting's end state (brief, transcript, every memory) by this checkout's code, its cost and
its measures, without playing the meeting again (a meeting takes minutes; this, one).

    python -m benchmarks.design_replay sweep/states/m512-edit-t0-s0.json
    python -m benchmarks.design_replay STATE.json --model gguf:PATH --out design.md
    python -m benchmarks.design_replay STATE.json --trace calls.jsonl   # each question, answer

STATE is a state file `benchmarks.memory_sweep run` stores. The model runs in this process:
never beside another embedded-model job.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from ima.core.settings import RunContext
from ima.measures.design_quality import design_quality
from ima.meeting.design.compile import compile_design
from ima.meeting.design.render import render_design
from ima.meeting.prompting import instruction_texts, task_prompt
from ima.models import Models
from ima.tasks import load_task


class _Trace(BaseCallbackHandler):
    """Each documentation call's part, the end of its question and its answer, a JSON line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("", encoding="utf-8")
        self.asked: dict[UUID, tuple[str, str]] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.asked[run_id] = ((metadata or {}).get("ima_part", ""), str(messages[0][-1].content))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        part, question = self.asked.pop(run_id, ("", ""))
        answer = response.generations[0][0].text
        line = {"part": part, "question": question[-900:], "answer": answer}
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.design_replay")
    parser.add_argument("state", type=Path, help="a state file of benchmarks.memory_sweep")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--task", default="data-pipeline")
    parser.add_argument("--out", type=Path, help="also write the design's Markdown here")
    parser.add_argument(
        "--trace", type=Path, help="write each call's part, question and answer here (JSON lines)"
    )
    args = parser.parse_args(argv)
    state = json.loads(args.state.read_text(encoding="utf-8"))
    task = load_task(args.task)
    stored = (state.get("final") or {}).get("spec") or {}
    settings = RunContext(model=args.model)
    model = Models().agent(settings)
    if args.trace:
        model.callbacks = [_Trace(args.trace)]
    instructions = instruction_texts(task, state.get("templates"))
    started = time.perf_counter()
    compiled = compile_design(
        task,
        state,
        model,
        system=task_prompt(task, state["brief"]),
        ending=stored.get("ending") or "all agents accepted",  # as the meeting's prompts said
        metadata={"ima_role": task.schedule.finalizer, "ima_kind": "documentation"},
        instructions=instructions,
    )
    seconds = time.perf_counter() - started
    markdown = render_design(compiled.design, task.title)
    if args.out:
        args.out.write_text(markdown, encoding="utf-8")
    print(markdown)
    usage = compiled.usage
    print(
        f"calls {compiled.calls}, retried {compiled.retried}; "
        f"generated {usage['output_tokens']:,}, prompt {usage['input_tokens']:,} "
        f"(cached {usage.get('cached_tokens', 0):,}); {seconds:.0f} s",
        file=sys.stderr,
    )
    for part, error in compiled.unusable.items():
        print(f"unusable {part}: {error}", file=sys.stderr)
    quality = design_quality(task, compiled.design, markdown, instructions) or {}
    print(json.dumps(quality, indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
