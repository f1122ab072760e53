"""Human in the loop before FINALIZE: a LangGraph interrupt that Studio, the SDK and the
`ima` command line all answer the same way.

Resume with `{"approve": true}` to finalize, or `{"feedback": "..."}`: the feedback becomes
a turn of the conversation (speaker HUMAN) and the team goes back to proposals, then votes
again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from ima import prompts
from ima.core.state import State, Turn, zero_usage
from ima.core.tokens import count_tokens
from ima.meeting.agent_context import render_turn
from ima.tasks import Task

REVIEW = "human_review"
HUMAN = "HUMAN"


def review_payload(task: Task, state: State) -> dict[str, Any]:
    recent = state["transcript"][-len(task.schedule.round_order) :]
    return {
        "question": prompts.render(
            "review_question",
            facilitator=task.schedule.facilitator,
            finalizer=task.schedule.finalizer,
        ),
        "votes": state["votes"],
        "recent_turns": [
            {"turn": t["index"], "speaker": t["speaker"], "content": t["content"]} for t in recent
        ],
        "answer_with": {"approve": True, "feedback": "text sent back to the agents"},
    }


def make_review_node(task: Task) -> Callable[..., Command]:
    schedule = task.schedule

    def human_review(state: State, runtime: Runtime) -> Command:
        answer = interrupt(review_payload(task, state))
        feedback = (answer.get("feedback") or "").strip() if isinstance(answer, dict) else ""
        if not feedback:  # approval (anything without feedback approves)
            return Command(goto=schedule.facilitator)
        index = len(state["transcript"]) + 1
        turn = Turn(
            index=index,
            speaker=HUMAN,
            phase=state["phase"],
            content=feedback,
            flags=[],
            tokens=count_tokens(render_turn(index, HUMAN, feedback)),
            usage=zero_usage(),
        )
        runtime.stream_writer(
            {"event": "turn", "turn": index, "speaker": HUMAN, "phase": state["phase"], "flags": []}
        )
        back = schedule.feedback()  # back to proposals, then a new vote
        return Command(goto=back["next_speaker"], update={"transcript": [turn], **back})

    return human_review
