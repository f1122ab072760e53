"""The paper's Algorithm 2, a modified round robin, as data and pure functions: who speaks
next, the phases and their rounds, the consensus vote, FINALIZE, and a person's feedback.

    schedule = Schedule(facilitator="CDA", workers=["BOA", "DEA"], after_round=["KIA"],
                        finalizer="DJE", phases=[Phase(name="discussion", rounds=1),
                                                 Phase(name="consensus", rounds=2)])
    position = schedule.start()
    position |= schedule.advance(position, transcript, turn_cap=60)  # after every turn
    position["next_speaker"]   # a role, or "documentation"

A round: the facilitator before each worker, then the after-round agents. In the last
phase every worker and after-round agent votes ACCEPT or REJECT. When all accept (with
`consensus="consent"`: some accept and none rejects), the facilitator is asked to say
FINALIZE, and documentation starts when it does; a facilitator that does not is asked once
more, then documentation starts anyway, recorded as the "fallback" hand-off. A vote without agreement goes on for the phase's rounds, then back to
the phase before it. The turn cap ends any meeting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DOCUMENTATION = "documentation"
"""`str`: the `next_speaker` `Schedule.advance` names once the meeting ends (FINALIZE, its
fallback or the turn cap): the step that writes the final document."""
# Times the facilitator is asked to say FINALIZE after consensus before the fallback.
FINALIZE_ASKS = 2
ACCEPT, REJECT, FINALIZE = "ACCEPT", "REJECT", "FINALIZE"


class Phase(BaseModel):
    """A phase of the meeting: its name, its rounds, and what speakers are asked in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    rounds: int = Field(ge=1)
    instruction: str = ""


class Schedule(BaseModel):
    """Algorithm 2 generalised: a facilitator between workers, a fixed sequence of agents
    after each full round, phases, and a finaliser that writes the output.

    `consensus` says when a vote round agrees. "unanimous" (the paper's rule, the default):
    every voter says ACCEPT. "consent": at least one voter says ACCEPT and none says REJECT;
    a turn without a clear vote abstains. The caller decides what counts as an objection:
    a turn whose flags hold no "REJECT" does not block (a meeting may count only a REJECT
    that names the requirement it defends)."""

    model_config = ConfigDict(extra="forbid")
    facilitator: str
    workers: list[str] = Field(min_length=1)
    after_round: list[str] = []
    finalizer: str
    phases: list[Phase] = Field(min_length=1)
    consensus: Literal["unanimous", "consent"] = "unanimous"

    @model_validator(mode="after")
    def _consistent(self) -> Schedule:
        names = [p.name for p in self.phases]
        if len(set(names)) != len(names):
            raise ValueError(f"phase names must be unique: {', '.join(names)}")
        if self.finalizer in self.speakers:
            raise ValueError(f"finalizer {self.finalizer!r} must not also speak in the discussion")
        return self

    @property
    def speakers(self) -> list[str]:
        """The roles that take part in the discussion, in first-appearance order."""
        return list(dict.fromkeys([self.facilitator, *self.workers, *self.after_round]))

    @property
    def voting_phase(self) -> str:
        """The phase in which every voter says ACCEPT or REJECT: the last one."""
        return self.phases[-1].name

    @property
    def round_order(self) -> list[str]:
        """One round: the facilitator before each worker, then the after-round agents."""
        order: list[str] = []
        for worker in self.workers:
            order += [self.facilitator, worker]
        return order + self.after_round

    @property
    def voters(self) -> list[str]:
        return list(dict.fromkeys(self.workers + self.after_round))

    def is_vote(self, role: str, phase: str) -> bool:
        """Whether this role's turn in this phase is a vote (only votes are read as votes)."""
        return phase == self.voting_phase and role in self.voters

    def start(self, phase: str | None = None) -> dict[str, Any]:
        """Where a meeting starts (or, given a `phase`, starts it again): that phase (the
        first), round 1, the round's first speaker, no votes."""
        return {
            "phase": phase or self.phases[0].name,
            "phase_round": 1,
            "position": 0,
            "next_speaker": self.round_order[0],
            "votes": {},
            "consensus": False,
            "finalize_asks": 0,
            "handoff": "",
        }

    def advance(
        self, position: Mapping[str, Any], transcript: Sequence[Mapping[str, Any]], turn_cap: int
    ) -> dict[str, Any]:
        """The position after the latest turn: only the keys that change.

        Args:
            position: the meeting's position, as `start` gave it and `advance` changed it.
            transcript: the turns so far, each a mapping with `speaker` and `flags` (the
                markers `parse_flags` read from its text).
            turn_cap: the most turns before the meeting ends without consensus.

        `next_speaker` is a role, or "documentation" with `handoff` "finalize" (the
        facilitator said FINALIZE after consensus), "fallback" (asked `FINALIZE_ASKS`
        times, it never did) or "turn_cap".
        """
        if not transcript:
            return {"next_speaker": self.round_order[0]}
        last = transcript[-1]
        if len(transcript) >= turn_cap:
            return {"next_speaker": DOCUMENTATION, "handoff": "turn_cap"}
        if position["consensus"]:
            return self._after_consensus(position, last)
        order = self.round_order
        phase, phase_round, votes = (
            position["phase"],
            position["phase_round"],
            dict(position["votes"]),
        )
        if self.is_vote(last["speaker"], phase):
            votes[last["speaker"]] = next((f for f in last["flags"] if f in (ACCEPT, REJECT)), "")
        following = position["position"] + 1
        if following < len(order):
            return {"position": following, "next_speaker": order[following], "votes": votes}
        names = [p.name for p in self.phases]  # a round is complete
        index = names.index(phase)
        if phase == self.voting_phase:
            if self._agreed(votes):
                return {"votes": votes, "consensus": True, "next_speaker": self.facilitator}
            if phase_round < self.phases[index].rounds:
                phase_round += 1
            elif index > 0:  # no agreement after the allowed votes: propose again, then vote
                phase, phase_round = names[index - 1], 1
            else:
                phase_round += 1
        elif phase_round < self.phases[index].rounds:
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

    def _agreed(self, votes: Mapping[str, str]) -> bool:
        said = [votes.get(v, "") for v in self.voters]
        if self.consensus == "consent":
            return ACCEPT in said and REJECT not in said
        return all(vote == ACCEPT for vote in said)

    def _after_consensus(self, position: Mapping[str, Any], last: Mapping[str, Any]) -> dict:
        if last["speaker"] != self.facilitator:
            return {"next_speaker": self.facilitator}
        if FINALIZE in last["flags"]:
            return {"next_speaker": DOCUMENTATION, "handoff": "finalize"}
        asks = position.get("finalize_asks", 0) + 1
        if asks < FINALIZE_ASKS:
            return {"finalize_asks": asks, "next_speaker": self.facilitator}
        return {"finalize_asks": asks, "next_speaker": DOCUMENTATION, "handoff": "fallback"}

    def speaker_after(self, position: Mapping[str, Any]) -> str:
        """Who speaks after the current speaker (whom the facilitator hands over to)."""
        if position["consensus"]:
            return self.finalizer
        order = self.round_order
        return order[(position["position"] + 1) % len(order)]

    def feedback(self) -> dict[str, Any]:
        """The position after a person's feedback on an agreed proposal: back to the phase
        before the vote, from the round's first speaker, with no votes."""
        names = [p.name for p in self.phases]
        return self.start(names[max(names.index(self.voting_phase) - 1, 0)])


# ---------------------------------------------------------------------------- markers
# Small models decorate their answers ("**ACCEPT**", "Vote: accept.", "I cannot accept"),
# so the first line decides when it holds a vote, then the whole text if it is unambiguous.

_NEGATED_ACCEPT = re.compile(r"\b(not|cannot|can't|won't|don't|do not)\s+accept", re.I)
_ACCEPT = re.compile(r"\baccept(s|ed)?\b", re.I)
_REJECT = re.compile(r"\breject(s|ed)?\b", re.I)
_MARKER_WORDS = re.compile(r"\b(?:accept(?:s|ed)?|reject(?:s|ed)?|finali[sz]e)\b", re.I)
_FINALIZE = re.compile(r"\bFINALI[SZ]E\b|^\W*(?i:finali[sz]e)\b", re.M)


def _vote_in(text: str) -> str | None:
    if _REJECT.search(text) or _NEGATED_ACCEPT.search(text):
        return None if _ACCEPT.search(_NEGATED_ACCEPT.sub("", text)) else REJECT
    return ACCEPT if _ACCEPT.search(text) else None


def parse_vote(text: str) -> str | None:
    """The vote in a turn's text: "ACCEPT", "REJECT" ("do not accept" too), or None when it
    holds no clear vote. The first non-empty line decides when it votes."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _vote_in(first) or _vote_in(text)


def parse_flags(text: str, voting: bool = True) -> list[str]:
    """The markers in a turn's text, as `Schedule.advance` takes them: its vote
    (`parse_vote`) when `voting`, then "FINALIZE" when it says so. Votes count only in a
    voting turn (a facilitator's "all accepted" is not a vote)."""
    flags = [vote] if voting and (vote := parse_vote(text)) else []
    if _FINALIZE.search(text):
        flags.append(FINALIZE)
    return flags


def only_markers(text: str) -> bool:
    """Whether a turn holds nothing but markers and punctuation (a bare "ACCEPT")."""
    return not re.sub(r"\W+", "", _MARKER_WORDS.sub("", text))
