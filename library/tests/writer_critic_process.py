"""A writer/critic run in its own process, for the SIGKILL resume test (test_graphs.py).

    python library/tests/writer_critic_process.py DB run [--kill-after N]   # SIGKILL after N steps
    python library/tests/writer_critic_process.py DB resume

Prints the final transcript and memories as JSON. Its fake model answers from the prompt
alone, so a resumed run can be compared with an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.sqlite import SqliteSaver

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import writer_critic


class PromptEcho(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "prompt-echo"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1].text
        digest = hashlib.sha256("".join(m.text for m in messages).encode()).hexdigest()[:6]
        if last.startswith(("# Update your memory", "# Edit your memory")):
            turn = last.split("## Your latest turn", 1)[1].split("\n", 1)[1]
            note = " ".join(turn.split()[:8])
            text = json.dumps({"edits": [{"to": "contributions", "add": note}]})
            if last.startswith("# Update"):
                text = json.dumps({"notes": [{"section": "contributions", "note": note}]})
        else:
            news = " ".join(f"{digest}{t}" for t in "xyz")  # new to its memory every time
            text = (
                f"{messages[0].text.split('.')[0]} answers {digest} after {len(messages)}: {news}."
            )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def main() -> None:
    db, command = sys.argv[1], sys.argv[2]
    kill_after = int(sys.argv[4]) if "--kill-after" in sys.argv else 0
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    graph = writer_critic.build(PromptEcho(), rounds=3, token_budget=300).compile(
        checkpointer=saver
    )
    config = {"configurable": {"thread_id": "wc"}}
    start = {"messages": [HumanMessage(writer_critic.TASK)], "rounds": 0}
    for step, _ in enumerate(graph.stream(start if command == "run" else None, config), 1):
        if step == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    values = graph.get_state(config).values
    print(
        json.dumps(
            {
                "messages": [[m.name, m.text] for m in values["messages"]],
                "memories": values["intrinsic_memory"],
            }
        )
    )


if __name__ == "__main__":
    main()
