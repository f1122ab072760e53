"""Algorithm 2: the modified round robin, phases, consensus and the turn cap."""

from conftest import rounds_to_finalize, turns_to_finalize


def expected_round() -> list[str]:
    # After CDA the next worker; after a worker CDA, except after the last: KIA -> ERA.
    return ["CDA", "BOA", "CDA", "DEA", "CDA", "MLA", "CDA", "IA", "KIA", "ERA"]


def phase_of_each_round(task, rejected_votes: int) -> list[str]:
    """Each phase for its rounds; after `rejected_votes` failed votes the team is voting
    again (a consensus phase out of rounds goes back to the phase before it)."""
    *before, consensus = task.schedule.phases
    phases = [p.name for p in before for _ in range(p.rounds)]
    for vote in range(1, rejected_votes + 2):
        phases.append(consensus.name)
        if vote <= rejected_votes and vote % consensus.rounds == 0:
            phases += [before[-1].name] * before[-1].rounds
    return phases


def test_round_order_is_algorithm_2(task):
    assert task.schedule.round_order == expected_round()


def test_scripted_run_follows_schedule_and_phases(run_graph, task):
    out = run_graph()
    speakers = [t["speaker"] for t in out["transcript"]]
    # every phase for its rounds, one consensus round, then CDA's FINALIZE turn
    assert speakers == expected_round() * rounds_to_finalize(task) + ["CDA"]
    phases = [t["phase"] for t in out["transcript"]]
    per_round = [p for p in phase_of_each_round(task, 0) for _ in expected_round()]
    assert phases == [*per_round, "consensus"]
    assert "FINALIZE" in out["transcript"][-1]["flags"]
    assert out["status"] == "finalized"


def test_documentation_starts_when_the_facilitator_says_finalize(run_graph, task):
    out = run_graph()
    assert out["handoff"] == "finalize" and out["finalize_asks"] == 0


def test_a_facilitator_that_withholds_finalize_is_asked_once_more(run_graph, task):
    out = run_graph(model="scripted:withhold_finalize=1")
    speakers = [t["speaker"] for t in out["transcript"]]
    assert speakers == expected_round() * rounds_to_finalize(task) + ["CDA", "CDA"]
    assert "FINALIZE" in out["transcript"][-1]["flags"]
    assert "FINALIZE" not in out["transcript"][-2]["flags"]
    assert out["handoff"] == "finalize" and out["status"] == "finalized"


def test_without_finalize_after_two_asks_documentation_starts_on_the_fallback(run_graph, task):
    out = run_graph(model="scripted:withhold_finalize=5")
    speakers = [t["speaker"] for t in out["transcript"]]
    assert speakers == expected_round() * rounds_to_finalize(task) + ["CDA", "CDA"]
    assert not any("FINALIZE" in t["flags"] for t in out["transcript"])
    assert out["handoff"] == "fallback" and out["status"] == "finalized"
    assert out["final"]["spec"]["components"]


def test_consensus_votes_are_recorded(run_graph):
    out = run_graph()
    assert out["consensus"] is True
    assert out["votes"] == {r: "ACCEPT" for r in ["BOA", "DEA", "MLA", "IA", "KIA", "ERA"]}


def test_a_rejection_forces_another_vote(run_graph, task):
    out = run_graph(model="scripted:reject_rounds=1")
    speakers = [t["speaker"] for t in out["transcript"]]
    assert speakers == expected_round() * rounds_to_finalize(task, rejected_votes=1) + ["CDA"]
    assert len(speakers) == turns_to_finalize(task, rejected_votes=1)
    rejected = [t for t in out["transcript"] if "REJECT" in t["flags"]]
    assert [t["speaker"] for t in rejected] == ["ERA"]
    assert out["status"] == "finalized"


def test_no_agreement_goes_back_to_proposals(run_graph, task):
    # The consensus phase allows 2 votes; after two rejected votes the team proposes again.
    # This reviewer always rejects, so the turn cap has to end the run: capped one turn
    # before the FINALIZE a third vote would have brought.
    cap = turns_to_finalize(task, rejected_votes=2) - 1
    out = run_graph(model="scripted:reject_rounds=2", turn_cap=cap)
    phases = [t["phase"] for t in out["transcript"]][:: len(expected_round())]
    assert phases == ["discussion", "proposals", "consensus", "consensus", "proposals", "consensus"]
    assert phases == phase_of_each_round(task, rejected_votes=2)
    assert len(out["transcript"]) == cap
    assert "FINALIZE" not in out["transcript"][-1]["flags"]
    assert out["status"] == "turn_cap"


def test_turn_cap_ends_the_run_with_documentation(run_graph):
    out = run_graph(turn_cap=7)
    assert len(out["transcript"]) == 7
    assert out["status"] == "turn_cap"
    assert out["final"]["spec"]["components"]  # what the run has is still written up


def test_the_voting_phase_is_the_schedules_last_whatever_its_name(task):
    """Tasks are data: the last phase is where the team votes, by whatever name the task
    gives it; phase names must be unique (the schedule moves between them by name)."""
    import pytest
    from langgraph.checkpoint.memory import InMemorySaver

    from ima.core.settings import RunContext
    from ima.meeting.builder import compile_graph
    from ima.tasks import Task

    data = task.model_dump()
    data["schedule"]["phases"][-1]["name"] = "vote"
    renamed = Task.model_validate(data)
    assert renamed.schedule.voting_phase == "vote"
    graph = compile_graph(renamed, "none", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "vote"}}
    out = graph.invoke({}, config, context=RunContext(model="scripted", long_term=False))
    assert out["status"] == "finalized" and out["consensus"] is True
    voted = [t for t in out["transcript"] if {"ACCEPT", "REJECT"} & set(t["flags"])]
    assert voted and {t["phase"] for t in voted} == {"vote"}

    data["schedule"]["phases"][0]["name"] = "vote"
    with pytest.raises(ValueError, match="phase names must be unique"):
        Task.model_validate(data)


# Votes the embedded model cast in the default meeting (12-06, seed 0): a reasoned objection
# and reflexes that name no requirement.
REASONED = "REJECT\n\nThe integrated proposal does not handle the blurring. This violates R5."
REFLEX = (
    "REJECT\n\nThe integrated proposal does not meet the requirements of the task goal. The "
    "camera count calculation is not accurate."
)
BY_TITLE = "REJECT: the design ignores the cellular data cap; send clips only."
# 12-06 again (seed 0, with the design's components shown): R5 in the voter's own words
IN_OWN_WORDS = (
    "REJECT\n\nThe integrated proposal violates the requirement that cameras must be blurred "
    "before people see data, access logging."
)


def test_a_rejection_counts_only_when_it_names_the_requirement_it_defends(task):
    from ima.meeting.votes import turn_flags

    assert task.schedule.consensus == "consent"
    assert turn_flags(task, REASONED, voting=True) == ["REJECT"]
    assert turn_flags(task, BY_TITLE, voting=True) == ["REJECT"]
    assert turn_flags(task, IN_OWN_WORDS, voting=True) == ["REJECT"]
    assert turn_flags(task, REFLEX, voting=True) == ["UNREASONED"]
    echo = "REJECT. The proposal does not meet the requirements specified in R1 to R12."
    assert turn_flags(task, echo, voting=True) == ["UNREASONED"]  # ERA, 12-06, t 0.7
    assert turn_flags(task, "ACCEPT. It covers R5.", voting=True) == ["ACCEPT"]
    assert turn_flags(task, REFLEX, voting=False) == []  # not a vote outside the ballot
    unanimous = task.model_copy(
        update={"schedule": task.schedule.model_copy(update={"consensus": "unanimous"})}
    )
    assert turn_flags(unanimous, REFLEX, voting=True) == ["REJECT"]


def test_an_objection_the_proposal_already_answers_abstains(task):
    """12-06, seed 0: a voter a round objected to R5 while the proposal on the table blurred
    faces and plates. Such an objection is ANSWERED; one the proposal does not answer
    still blocks, as does one naming a second requirement the proposal leaves out."""
    from ima.meeting.votes import turn_flags

    blurs = "- Anonymisation: OpenCV blurs faces and licence plates; access is logged."
    assert turn_flags(task, IN_OWN_WORDS, voting=True, proposal=blurs) == ["ANSWERED"]
    no_log = "- Anonymisation: OpenCV on AWS Batch blurs faces and licence plates first."
    assert turn_flags(task, IN_OWN_WORDS, voting=True, proposal=no_log) == ["REJECT"]
    both = "REJECT: R5 and R4 (the cellular data cap) are not met."
    assert turn_flags(task, both, voting=True, proposal=blurs) == ["REJECT"]


# 12-07, seed 0: the Data Engineer's objection in the first vote, its role's sentence and a line
# of the proposal on the table, which together hold the words of R2 and R10
ON_THE_TABLE = (
    "- Storage and retention: The storage of raw, blurred training and safety-event data in EU "
    "regions, each kept no longer than allowed ..."
)
COPIED_OBJECTION = (
    "REJECT\n\nThe integrated proposal violates the requirement that the volumes add up (80 "
    "TB/day recorded, 12 TB/day uploaded) and that the 5-minute and 12-hour latency targets "
    "are met without losing data.\n\nThe proposal does not meet the requirements for storage "
    "and retention: the storage of raw, blurred training and safety-event data in EU regions, "
    "each kept no longer than allowed."
)


def test_an_objection_names_a_requirement_only_in_the_voters_own_words(task):
    """Copied from the voter's role text and the proposal it judges, DEA's objection names
    nothing; the same words are another voter's own when no proposal holds them, and DEA's
    own reasoned objection still blocks."""
    from ima.meeting.votes import turn_flags

    def flags(text: str, speaker: str, proposal: str = ON_THE_TABLE) -> list[str]:
        return turn_flags(task, text, voting=True, proposal=proposal, speaker=speaker)

    assert flags(COPIED_OBJECTION, "DEA") == ["UNREASONED"]
    assert flags(COPIED_OBJECTION, "MLA", proposal="") == ["REJECT"]
    assert flags(REASONED, "DEA") == ["REJECT"]
    assert flags(IN_OWN_WORDS, "BOA") == ["REJECT"]


def test_reflex_rejections_abstain_and_the_meeting_agrees(run_graph, monkeypatch):
    """Voters that reject without naming a requirement do not block a vote others accept."""
    from ima.models.scripted import ScriptedChatModel

    original = ScriptedChatModel._turn  # a meeting turn's text for its prompt

    def reflex(self, prompt: str) -> str:
        text = original(self, prompt)
        return REFLEX if text.startswith("REJECT") else text

    monkeypatch.setattr(ScriptedChatModel, "_turn", reflex)
    out = run_graph(model="scripted:reject_rounds=100000")
    flags = [f for t in out["transcript"] for f in t["flags"]]
    assert "UNREASONED" in flags and "REJECT" not in flags
    assert out["status"] == "finalized"
