"""Algorithm 2 as pure functions: the modified round robin, phases, votes, FINALIZE, the
fallback hand-off, a person's feedback and the turn cap."""

from __future__ import annotations

from typing import Any

import pytest
from intrinsic_memory import Phase, Schedule
from intrinsic_memory.schedule import DOCUMENTATION, parse_flags
from pydantic import ValidationError

SCHEDULE = Schedule(
    facilitator="CDA",
    workers=["BOA", "DEA"],
    after_round=["KIA"],
    finalizer="DJE",
    phases=[Phase(name="discussion", rounds=1), Phase(name="consensus", rounds=2)],
)


def meet(
    answer: Any, turn_cap: int = 60, schedule: Schedule = SCHEDULE
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run the schedule: `answer(speaker, position)` is each turn's text."""
    position, transcript = schedule.start(), []
    while position["next_speaker"] != DOCUMENTATION:
        speaker = position["next_speaker"]
        text = answer(speaker, position)
        voting = schedule.is_vote(speaker, position["phase"])
        transcript.append({"speaker": speaker, "flags": parse_flags(text, voting=voting)})
        position |= schedule.advance(position, transcript, turn_cap)
    return transcript, position


def agreeable(speaker: str, position: dict[str, Any]) -> str:
    return "FINALIZE. Agreed." if position["consensus"] else "ACCEPT"


def test_a_round_is_the_facilitator_before_each_worker_then_the_after_round_agents():
    assert SCHEDULE.round_order == ["CDA", "BOA", "CDA", "DEA", "KIA"]
    assert SCHEDULE.speakers == ["CDA", "BOA", "DEA", "KIA"]


def test_documentation_starts_when_the_facilitator_says_finalize_after_consensus():
    transcript, position = meet(agreeable)
    assert [t["speaker"] for t in transcript] == SCHEDULE.round_order * 2 + ["CDA"]
    assert position["handoff"] == "finalize" and position["consensus"]


def test_a_facilitator_that_does_not_say_finalize_is_asked_once_more_then_the_fallback():
    transcript, position = meet(lambda s, p: "Everyone agrees." if p["consensus"] else "ACCEPT")
    assert [t["speaker"] for t in transcript][-2:] == ["CDA", "CDA"]
    assert position["handoff"] == "fallback" and position["finalize_asks"] == 2


def test_a_rejected_vote_is_voted_again_then_the_phase_before_it_returns():
    votes = iter(["REJECT"] * 2)

    def answer(speaker: str, position: dict[str, Any]) -> str:
        if speaker == "KIA" and position["phase"] == "consensus":
            return next(votes, "ACCEPT")
        return agreeable(speaker, position)

    transcript, position = meet(answer)
    rounds = len(transcript) // len(SCHEDULE.round_order)
    assert rounds == 5  # discussion, vote, vote, discussion again, vote: accepted
    assert position["handoff"] == "finalize"


@pytest.mark.parametrize(
    ("consensus", "kia_says", "votes"),
    [
        ("unanimous", "I have no view.", 3),  # an unclear vote blocks, like a REJECT
        ("consent", "I have no view.", 1),  # it abstains: the first vote agrees
        ("consent", "REJECT", 3),  # a REJECT blocks either way
    ],
)
def test_consent_lets_a_voter_abstain_but_not_object(consensus, kia_says, votes):
    schedule = SCHEDULE.model_copy(update={"consensus": consensus})
    says = iter([kia_says] * 2)

    def answer(speaker: str, position: dict[str, Any]) -> str:
        if speaker == "KIA" and position["phase"] == "consensus" and not position["consensus"]:
            return next(says, "ACCEPT")
        return agreeable(speaker, position)

    transcript, position = meet(answer, schedule=schedule)
    assert position["handoff"] == "finalize"
    assert len(transcript) // len(SCHEDULE.round_order) == 2 + (votes - 1) + (votes > 1)


def test_consent_needs_one_voter_to_accept():
    schedule = SCHEDULE.model_copy(update={"consensus": "consent"})
    _, position = meet(lambda s, p: "No view.", turn_cap=20, schedule=schedule)
    assert position["handoff"] == "turn_cap" and not position["consensus"]


def test_the_turn_cap_ends_any_meeting():
    transcript, position = meet(lambda s, p: "REJECT", turn_cap=13)
    assert len(transcript) == 13 and position["handoff"] == "turn_cap"


def test_a_persons_feedback_returns_the_meeting_to_the_phase_before_the_vote():
    back = SCHEDULE.feedback()
    assert back["phase"] == "discussion" and back["next_speaker"] == "CDA"
    assert not back["consensus"] and back["votes"] == {} and back["finalize_asks"] == 0


def test_a_schedule_is_checked_when_it_is_made():
    with pytest.raises(ValidationError, match="phase names must be unique"):
        Schedule(
            facilitator="A",
            workers=["B"],
            finalizer="C",
            phases=[Phase(name="x", rounds=1), Phase(name="x", rounds=1)],
        )
    with pytest.raises(ValidationError, match="finalizer 'B' must not also speak"):
        Schedule(facilitator="A", workers=["B"], finalizer="B", phases=[Phase(name="x", rounds=1)])
