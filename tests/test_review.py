"""Human in the loop before FINALIZE, from the command line and through LangGraph interrupts."""

from __future__ import annotations

import json

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from ima.core.settings import RunContext
from ima.meeting.builder import compile_graph


def test_interrupt_before_finalize_then_feedback_then_approval(task):
    graph = compile_graph(task, "intrinsic", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "hitl"}}
    context = RunContext(model="scripted", review=True)
    graph.invoke({}, config, context=context)
    snapshot = graph.get_state(config)
    assert snapshot.next == ("human_review",)
    question = snapshot.tasks[0].interrupts[0].value
    assert set(question["votes"].values()) == {"ACCEPT"}
    assert not any("FINALIZE" in t["flags"] for t in snapshot.values["transcript"])

    graph.invoke(
        Command(resume={"feedback": "Cut storage cost by tiering cold data"}),
        config,
        context=context,
    )
    transcript = graph.get_state(config).values["transcript"]
    human = [t for t in transcript if t["speaker"] == "HUMAN"]
    assert [t["content"] for t in human] == ["Cut storage cost by tiering cold data"]
    after = transcript[human[0]["index"] :]
    assert after[0]["speaker"] == "CDA" and after[0]["phase"] == "proposals"
    assert graph.get_state(config).next == ("human_review",)  # the team voted again

    out = graph.invoke(Command(resume={"approve": True}), config, context=context)
    assert out["status"] == "finalized"
    assert "FINALIZE" in out["transcript"][-1]["flags"]


def test_cli_review_pauses_and_resumes(cli):
    code, out, err = cli("run", "--model", "scripted", "--review", "--thread", "r", "--json")
    assert code == 0
    assert json.loads(out)["status"] == "awaiting_review"
    assert "ima resume r --approve" in err
    assert json.loads(cli("runs", "--json")[1])[0]["status"] == "awaiting_review"
    code, out, err = cli("resume", "r", "--feedback", "Add a monthly cost table", "--json")
    assert code == 0 and json.loads(out)["status"] == "awaiting_review"
    code, out, err = cli("resume", "r", "--approve", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "finalized"
    shown = json.loads(cli("show", "r", "--json")[1])
    assert [t["content"] for t in shown["transcript"] if t["speaker"] == "HUMAN"] == [
        "Add a monthly cost table"
    ]


def test_auto_approve(cli):
    code, out, _ = cli("run", "--model", "scripted", "--approve", "--json")
    assert code == 0 and json.loads(out)["status"] == "finalized"
