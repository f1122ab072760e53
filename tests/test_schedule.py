"""Algorithm 2: the modified round robin, phases, consensus and the turn cap."""

from ima.method.schedule import round_order

WORKERS = ["BOA", "DEA", "MLA", "IA"]


def expected_round() -> list[str]:
    # After CDA the next worker; after a worker CDA, except after the last: KIA -> ERA.
    return ["CDA", "BOA", "CDA", "DEA", "CDA", "MLA", "CDA", "IA", "KIA", "ERA"]


def test_round_order_is_algorithm_2(task):
    assert round_order(task.schedule) == expected_round()


def test_scripted_run_follows_schedule_and_phases(run_graph):
    out = run_graph()
    speakers = [t["speaker"] for t in out["transcript"]]
    # discussion, proposals, one consensus round, then CDA's FINALIZE turn
    assert speakers == expected_round() * 3 + ["CDA"]
    phases = [t["phase"] for t in out["transcript"]]
    assert phases[:10] == ["discussion"] * 10
    assert phases[10:20] == ["proposals"] * 10
    assert set(phases[20:]) == {"consensus"}
    assert "FINALIZE" in out["transcript"][-1]["flags"]
    assert out["status"] == "finalized"


def test_consensus_votes_are_recorded(run_graph):
    out = run_graph()
    assert out["consensus"] is True
    assert out["votes"] == {r: "ACCEPT" for r in ["BOA", "DEA", "MLA", "IA", "KIA", "ERA"]}


def test_a_rejection_forces_another_vote(run_graph):
    out = run_graph(model="scripted:reject_rounds=1")
    speakers = [t["speaker"] for t in out["transcript"]]
    assert speakers == expected_round() * 4 + ["CDA"]
    rejected = [t for t in out["transcript"] if "REJECT" in t["flags"]]
    assert [t["speaker"] for t in rejected] == ["ERA"]
    assert out["status"] == "finalized"


def test_no_agreement_goes_back_to_proposals(run_graph):
    # The consensus phase allows 2 votes; after two rejected votes the team proposes again.
    # This reviewer always rejects, so the turn cap has to end the run.
    out = run_graph(model="scripted:reject_rounds=2", turn_cap=60)
    phases = [t["phase"] for t in out["transcript"]][::10]
    assert phases == ["discussion", "proposals", "consensus", "consensus", "proposals", "consensus"]
    assert len(out["transcript"]) == 60
    assert out["status"] == "turn_cap"


def test_turn_cap_ends_the_run_with_documentation(run_graph):
    out = run_graph(turn_cap=7)
    assert len(out["transcript"]) == 7
    assert out["status"] == "turn_cap"
    assert out["final"]["valid"]  # what the run has is still written up
