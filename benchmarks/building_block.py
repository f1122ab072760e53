"""The library as a building block: what it costs a user to adopt, and what it keeps flat.

    python -m benchmarks.building_block [--turns 200] [--budget 400] [--repeats 5]

Printed:
1. lines a user adds to each example to give its agents intrinsic memory (the lines marked
   `# +` in examples/writer_critic.py and examples/supervisor.py);
2. time to import the library's public API (every name in `intrinsic_memory.__all__`) in a fresh
   interpreter against `import langgraph.graph` alone, median of --repeats, as a ratio;
3. prompt tokens per agent call over a long writer/critic exchange (the example's real graph
   driven by the instant scripted model), against the whole history a memoryless prompt would
   carry at the same call: flat within the budget, however long the exchange.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from intrinsic_memory import count_message_tokens
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ima.models.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def added_lines(example: str) -> list[str]:
    text = (EXAMPLES / example).read_text()
    code = (line.split("#", 1) for line in text.splitlines() if "  # +" in line)
    return [f"{c.strip()}  #{comment}" for c, comment in code if c.strip()]


def import_seconds(code: str, repeats: int) -> float:
    timer = f"import time; t = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", timer], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return statistics.median(runs)


class PromptSizes(BaseCallbackHandler):
    """Records the tokens of every agent call's messages (memory updates apart)."""

    def __init__(self) -> None:
        self.agent: list[int] = []

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        if "memory_update" not in (kwargs.get("tags") or []):
            self.agent.append(count_message_tokens(messages[0]))


def writer_critic_prompts(turns: int, budget: int) -> tuple[list[int], list[int]]:
    """Tokens per agent call with intrinsic memory, and what the whole history would be."""
    sys.path.insert(0, str(EXAMPLES))
    import writer_critic

    sizes = PromptSizes()
    model = ScriptedChatModel()
    graph = writer_critic.build(model, rounds=turns // 2, token_budget=budget).compile()
    result = graph.invoke(
        {"messages": [HumanMessage(writer_critic.TASK)], "rounds": 0},
        {"recursion_limit": 3 * turns + 10, "callbacks": [sizes]},
    )
    messages = result["messages"]
    whole = []
    for call in range(len(sizes.agent)):  # call k sees the task and the k turns before it
        system = SystemMessage(writer_critic.WRITER if call % 2 == 0 else writer_critic.CRITIC)
        whole.append(count_message_tokens([system, *messages[: call + 1]]))
    return sizes.agent, whole


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="writer/critic turns")
    parser.add_argument("--budget", type=int, default=400, help="context budget in tokens")
    parser.add_argument("--repeats", type=int, default=5, help="fresh interpreters per import")
    args = parser.parse_args(argv)

    print("1. lines added for intrinsic memory")
    for example, per in (("writer_critic.py", 2), ("supervisor.py", 2)):
        lines = added_lines(example)
        print(f"   {example}: {len(lines)} lines ({per} agents; goal: at most 10 / 5 per agent)")
        for line in lines:
            print(f"     {line}")

    print("2. import time in a fresh interpreter (median of", args.repeats, "runs)")
    base = import_seconds("import langgraph.graph", args.repeats)
    code = "import intrinsic_memory as m\nfor n in m.__all__: getattr(m, n)"
    api = import_seconds(code, args.repeats)
    print(f"   import langgraph.graph                     {base:.3f} s")
    print(f"   the library's public API (__all__)          {api:.3f} s   ratio {api / base:.2f}x")

    print(
        f"3. prompt tokens per agent call, writer/critic, {args.turns} turns, budget {args.budget}"
    )
    ours, whole = writer_critic_prompts(args.turns, args.budget)
    print(f"   {'call':>6} {'intrinsic memory':>17} {'whole history':>14}")
    for call in sorted({c for c in (1, 10, 50, 100) if c <= len(ours)} | {len(ours)}):
        print(f"   {call:>6} {ours[call - 1]:>17,} {whole[call - 1]:>14,}")
    late = ours[len(ours) // 4 :]
    print(
        f"   max over the last three quarters {max(late):,} (budget {args.budget} plus the "
        f"system prompt); last / first-quarter-end {ours[-1] / ours[len(ours) // 4]:.2f}"
    )


if __name__ == "__main__":
    main()
