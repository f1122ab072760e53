"""Fake chat models that answer from the prompt alone and record every call (the idiom of
langgraph-supervisor's and langgraph-swarm's tests), and the repository's examples."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

UPDATE, EDIT = "# Update your memory", "# Edit your memory"


def latest_turn(prompt: str) -> str:
    return prompt.split("## Your latest turn", 1)[1].split("\n", 1)[1].strip()


def is_memory_call(call: list[BaseMessage]) -> bool:
    return call[-1].text.startswith((UPDATE, EDIT))


class Recorder(BaseChatModel):
    """Answers as an agent or as a memory update, from the prompt alone; records calls.

    An agent's answer names who it is (its system prompt's first words), the call number
    and words of its own; a memory update keeps the first words of the agent's latest turn
    and its last as a note."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)
    script: list[AIMessage] = Field(default_factory=list)  # answers to a supervisor, in order
    supervisor: str = ""  # the system prompt of the agent the script answers

    @property
    def _llm_type(self) -> str:
        return "recorder"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls.append(messages)
        last = messages[-1].text
        if is_memory_call(messages):
            words = latest_turn(last).split()  # its first words and its last: never the same
            note = " ".join([*words[:4], "...", *words[-3:]] if len(words) > 8 else words)
            if last.startswith(EDIT):
                reply = AIMessage(json.dumps({"edits": [{"to": "contributions", "add": note}]}))
            else:
                reply = AIMessage(
                    json.dumps({"notes": [{"section": "contributions", "note": note}]})
                )
        elif self.supervisor and messages[0].text == self.supervisor and self.script:
            reply = self.script.pop(0)
        else:
            who = messages[0].text.split(".")[0] if isinstance(messages[0], SystemMessage) else "?"
            n = len(self.calls)  # new words every call: each turn is news to its memory
            reply = AIMessage(f"{who} answers as call {n}: " + " ".join(f"{t}{n}" for t in "xyz"))
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def agent_calls(self) -> list[list[BaseMessage]]:
        return [c for c in self.calls if not is_memory_call(c)]

    def memory_calls(self) -> list[list[BaseMessage]]:
        return [c for c in self.calls if is_memory_call(c)]
