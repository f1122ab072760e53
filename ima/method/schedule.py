"""The paper's Algorithm 2 as a pure function of the state: who speaks next, and when the
phase, the round or the run changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ima.core.state import Turn
from ima.tasks import Schedule

DOCUMENTATION = "documentation"
# After consensus the facilitator is asked to say FINALIZE; if it does not, it is asked once
# more, then documentation starts anyway (the hand-off is recorded as "fallback").
FINALIZE_ASKS = 2


def round_order(schedule: Schedule) -> list[str]:
    """One round: facilitator before each worker, then the after-round agents (KIA, ERA)."""
    order: list[str] = []
    for worker in schedule.workers:
        order += [schedule.facilitator, worker]
    return order + schedule.after_round


def voters(schedule: Schedule) -> list[str]:
    return list(dict.fromkeys(schedule.workers + schedule.after_round))


def is_vote(schedule: Schedule, role_id: str, phase: str) -> bool:
    """Whether this role's turn in this phase is a vote (only votes are read as votes)."""
    return phase == schedule.voting_phase and role_id in voters(schedule)


def initial_position(schedule: Schedule) -> dict[str, Any]:
    """Where a meeting starts: the first phase, round 1, the round's first speaker, no votes
    (the `state` that `advance_schedule` takes first)."""
    return {
        "phase": schedule.phases[0].name,
        "phase_round": 1,
        "position": 0,
        "next_speaker": round_order(schedule)[0],
        "votes": {},
        "consensus": False,
        "finalize_asks": 0,
        "handoff": "",
    }


def advance_schedule(
    schedule: Schedule, state: Mapping[str, Any], transcript: Sequence[Turn], turn_cap: int
) -> dict[str, Any]:
    """Algorithm 2 after the latest turn: who speaks next, and the phase, round and votes.

    Args:
        schedule: the task's schedule (facilitator, workers, after-round agents, phases).
        state: the meeting's position: `phase`, `phase_round`, `position` (index of the last
            speaker in the round's order), `votes` and `consensus`; start from
            `initial_position(schedule)`.
        transcript: the turns so far; each a mapping with `speaker` and `flags` (the votes
            "ACCEPT"/"REJECT" parsed from its text: `ima.method.votes.parse_flags`).
        turn_cap: the most turns before the meeting ends without consensus.

    Returns the position's changed keys; `next_speaker` is a role, or "documentation" once
    every voter accepted and the facilitator said FINALIZE (`handoff` "finalize"), or the
    facilitator, asked `FINALIZE_ASKS` times, never did (`handoff` "fallback"), or the turn
    cap is reached (`handoff` "turn_cap").
    """
    if not transcript:
        return {"next_speaker": round_order(schedule)[0]}
    last = transcript[-1]
    if len(transcript) >= turn_cap:
        return {"next_speaker": DOCUMENTATION, "handoff": "turn_cap"}
    if state["consensus"]:
        return _after_consensus(schedule, state, last)

    order = round_order(schedule)
    phase, phase_round, votes = state["phase"], state["phase_round"], dict(state["votes"])
    if phase == schedule.voting_phase and last["speaker"] in voters(schedule):
        votes[last["speaker"]] = next((f for f in last["flags"] if f in ("ACCEPT", "REJECT")), "")

    position = state["position"] + 1
    if position < len(order):
        return {"position": position, "next_speaker": order[position], "votes": votes}

    # A round is complete.
    names = [p.name for p in schedule.phases]
    index = names.index(phase)
    if phase == schedule.voting_phase:
        if all(votes.get(v) == "ACCEPT" for v in voters(schedule)):
            return {"votes": votes, "consensus": True, "next_speaker": schedule.facilitator}
        if phase_round < schedule.phases[index].rounds:
            phase_round += 1
        elif index > 0:  # no agreement after the allowed votes: back to proposals, then vote again
            phase, phase_round = names[index - 1], 1
        else:
            phase_round += 1
    elif phase_round < schedule.phases[index].rounds:
        phase_round += 1
    else:
        phase, phase_round = names[index + 1], 1
    return {
        "phase": phase,
        "phase_round": phase_round,
        "position": 0,
        "next_speaker": order[0],
        "votes": {},
    }


def _after_consensus(schedule: Schedule, state: Mapping[str, Any], last: Turn) -> dict[str, Any]:
    """Every voter accepted: documentation once the facilitator says FINALIZE."""
    if last["speaker"] != schedule.facilitator:
        return {"next_speaker": schedule.facilitator}
    if "FINALIZE" in last["flags"]:
        return {"next_speaker": DOCUMENTATION, "handoff": "finalize"}
    asks = state.get("finalize_asks", 0) + 1
    if asks < FINALIZE_ASKS:
        return {"finalize_asks": asks, "next_speaker": schedule.facilitator}
    return {"finalize_asks": asks, "next_speaker": DOCUMENTATION, "handoff": "fallback"}


def speaker_after(schedule: Schedule, state: dict[str, Any]) -> str:
    """Who will speak after the current speaker (what the facilitator hands over to)."""
    if state["consensus"]:
        return schedule.finalizer
    order = round_order(schedule)
    return order[(state["position"] + 1) % len(order)]


def memory_due(state: Mapping[str, Any]) -> list[str]:
    """Agents whose own latest turn their memory has not yet been formed from.

    Only the last two turns' speakers can be due: a memory update runs right after its
    agent's turn, or beside the next speaker's turn.
    """
    memories = state.get("memories") or {}
    due = []
    for turn in list(state.get("transcript") or [])[-2:]:
        slot = memories.get(turn["speaker"])
        if slot is not None and turn["index"] > slot.get("seen_turn", slot["updated_turn"]):
            due.append(turn["speaker"])
    return due


def next_steps(state: Mapping[str, Any], concurrency: int) -> tuple[list[str], str | None]:
    """What runs next: the roles whose memory update is due, and the next step (a speaker,
    documentation or review) unless it must wait for those updates.

    With concurrency 1 the memory of an agent is formed before anyone else speaks (the
    paper's order). With 2 an agent's memory update runs beside the next speaker's turn:
    neither reads what the other writes. Updates always finish before documentation or a
    review: nothing after the meeting may miss a memory.
    """
    nxt, due = state["next_speaker"], memory_due(state)
    if not due or (concurrency > 1 and nxt in (state.get("memories") or {})):
        return due, nxt
    return due, None
