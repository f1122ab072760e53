"""The agent node of one role: build its context (Algorithm 1), call the model, append the turn."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.core.state import State, Turn
from ima.core.tokens import count_tokens
from ima.meeting.agent_context import build_turn_prompt, render_turn, turn_words, voted_proposal
from ima.meeting.votes import turn_flags
from ima.models import Models
from ima.models.calls import call_model
from ima.tasks import Task

# An English word is about 1.3 tokens; figures and units take more. A turn that keeps to its
# word limit ends well within this cap; small models that ramble past it stop here.
TOKENS_PER_WORD = 1.5


def turn_output_cap(words: int) -> int:
    """The most tokens a turn may generate when `words` words are asked."""
    return math.ceil(TOKENS_PER_WORD * words)


def make_agent_node(
    task: Task, role_id: str, with_memory: bool, models: Models
) -> Callable[..., dict[str, Any]]:
    schedule = task.schedule

    def agent(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        settings = runtime.context
        prompt = build_turn_prompt(task, role_id, state, settings, with_memory)
        index = len(state["transcript"]) + 1
        metadata = {  # labels for tracing (LangSmith, callbacks); models read the prompt
            "ima_kind": "agent_turn",
            "ima_role": role_id,
            "ima_turn": index,
            "ima_phase": state["phase"],
            "ima_round": state["phase_round"],
        }
        voting = schedule.is_vote(role_id, state["phase"])
        text, usage = call_model(
            models.agent(settings),
            prompt.messages,
            metadata,
            max_tokens=turn_output_cap(turn_words(task, role_id, settings)),
        )
        turn = Turn(
            index=index,
            speaker=role_id,
            phase=state["phase"],
            round=state["phase_round"],
            content=text,
            flags=turn_flags(
                task,
                text,
                voting=voting,
                proposal=voted_proposal(task, state["transcript"]) if voting else "",
                speaker=role_id,
            ),
            tokens=count_tokens(render_turn(index, role_id, text)),
            usage=usage,
            context=prompt.share,
        )
        runtime.stream_writer(
            {
                "event": "turn",
                "turn": index,
                "speaker": role_id,
                "phase": state["phase"],
                "flags": turn["flags"],
            }
        )
        return {"transcript": [turn], "usage": {role_id: {"agent_turn": usage}}}

    agent.__name__ = role_id
    return agent
