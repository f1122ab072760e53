"""Memory formation beside the next turn, on a server with parallel capacity.

A fake Ollama server over real HTTP answers every call after a fixed latency and serves
`parallel` calls at once (like OLLAMA_NUM_PARALLEL); it answers like the scripted model,
reading the prompt. The real graph runs the same meeting with memory_concurrency 1 (each
memory update before the next turn) and 2 (beside it), and the wall time per turn of the
two is compared.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from ima.core.settings import RunContext
from ima.meeting.builder import compile_graph
from ima.models.scripted import ScriptedChatModel
from ima.tasks import load_task

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_ollama import FakeOllama

_MESSAGE = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
_SCRIPTED = ScriptedChatModel()


def scripted_responder(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    chat = [_MESSAGE[m["role"]](m.get("content") or "") for m in messages]
    return _SCRIPTED._answer(chat, "\n".join(str(m.content) for m in chat))


def _run(task: Any, concurrency: int, turns: int) -> dict[str, Any]:
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    settings = RunContext(
        model="ollama:bench", memory_concurrency=concurrency, turn_cap=turns, long_term=False
    )
    stamps: list[float] = []
    started = time.perf_counter()
    for chunk in graph.stream({}, {"configurable": {"thread_id": "b"}}, context=settings):
        if any(isinstance(u, dict) and u.get("transcript") for u in chunk.values()):
            stamps.append(time.perf_counter())
    per_turn = (stamps[-1] - stamps[0]) / max(len(stamps) - 1, 1)
    return {
        "concurrency": concurrency,
        "turns": len(stamps),
        "seconds": time.perf_counter() - started,
        "seconds_per_turn": per_turn,
    }


def measure(turns: int = 16, latency: float = 0.25, parallel: int = 2) -> dict[str, Any]:
    task = load_task("data-pipeline")
    host = os.environ.get("OLLAMA_HOST")
    with FakeOllama(models={"bench": scripted_responder}, delay=latency, parallel=parallel) as s:
        os.environ["OLLAMA_HOST"] = s.url
        try:
            runs = [_run(task, concurrency, turns) for concurrency in (1, 2)]
        finally:
            if host is None:
                os.environ.pop("OLLAMA_HOST", None)
            else:
                os.environ["OLLAMA_HOST"] = host
    sequential, concurrent = runs
    return {
        "latency": latency,
        "parallel": parallel,
        "runs": runs,
        "ratio": concurrent["seconds_per_turn"] / sequential["seconds_per_turn"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_formation")
    parser.add_argument("--turns", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.25, help="seconds per call")
    parser.add_argument("--parallel", type=int, default=2, help="calls the server runs at once")
    args = parser.parse_args(argv)
    figures = measure(args.turns, args.latency, args.parallel)
    for run in figures["runs"]:
        print(
            f"memory_concurrency {run['concurrency']}: {run['turns']} turns, "
            f"{run['seconds_per_turn']:.3f} s per turn"
        )
    print(f"concurrent / sequential wall time per turn: {figures['ratio']:.2f} (target <= 0.6)")


if __name__ == "__main__":
    main()
