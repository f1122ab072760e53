"""The final design: every required section filled, or asked for once more and then marked
missing in design.md and run.json, never silently empty (fake chat models)."""

from __future__ import annotations

import json

import pytest
from conftest import PromptRecorder
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.method.final_design import MISSING, design_schema, read_design
from ima.models import Models
from ima.models.scripted import example_instance
from ima.nodes.documentation import make_documentation_node

COMPLETE = (
    "## Summary\nA managed EU pipeline. It ingests 12 TB/day. It blurs faces first.\n\n"
    "## High-level plan\n1. Depot offload\n2. Blurring\n3. Training\n\n"
    "## Resource estimates\n| item | USD |\n|---|---|\n| storage | 20,000 |"
)


def answer(text: str, *, cut: bool = False) -> AIMessage:
    return AIMessage(
        text,
        usage_metadata={"input_tokens": 50, "output_tokens": 30, "total_tokens": 80},
        response_metadata={"finish_reason": "length" if cut else "stop"},
    )


def document(task, *answers: AIMessage, callbacks=()) -> tuple[dict, list[str]]:
    """The documentation node's update for a finished meeting, and the prompts it sent."""
    spec = answer(json.dumps(example_instance(task.output_schema)))
    model = FakeMessagesListChatModel(responses=[*answers, spec])
    recorder = PromptRecorder()
    model.callbacks = [recorder]
    node = make_documentation_node(task, Models(agent_model=model))
    state = {
        **task.schedule.start(),
        "brief": task.description,
        "consensus": True,
        "transcript": [],
    }
    update = node(state, Runtime(context=RunContext(model="scripted", long_term=False)))
    return update, [str(messages[-1].content) for _, messages in recorder.calls]


def test_a_complete_markdown_design_is_kept_as_written(task):
    update, prompts = document(task, answer(COMPLETE))
    final = update["final"]
    assert final["markdown"] == COMPLETE and final["missing"] == []
    assert final["valid"] and update["status"] == "finalized"
    assert update["usage"]["DJE"]["documentation"]["calls"] == 2  # design, specification
    assert '"## Summary"' in prompts[0]  # a backend that answers in text is asked for Markdown


def test_a_missing_section_is_asked_for_once_more(task):
    without_summary = COMPLETE.split("\n\n", 1)[1]
    update, prompts = document(task, answer(without_summary), answer(COMPLETE))
    assert update["final"]["markdown"] == COMPLETE and update["final"]["missing"] == []
    assert 'leaves "Summary" missing or empty' in prompts[1]
    assert update["usage"]["DJE"]["documentation"]["calls"] == 3


def test_a_section_still_missing_is_marked_missing_never_left_empty(task):
    empty_summary = "## Summary\n\n" + COMPLETE.split("\n\n", 1)[1]
    update, _ = document(task, answer(empty_summary), answer(empty_summary))
    final = update["final"]
    assert final["missing"] == ["summary"]
    assert final["markdown"].startswith(f"## Summary\n{MISSING}\n\n## High-level plan\n1. Depot")
    assert final["valid"]  # the specification is still written from what there is


def test_an_answer_cut_off_at_the_cap_is_asked_again_and_its_last_section_not_kept(task):
    cut = COMPLETE.rsplit("|", 2)[0]  # the cost table stops mid-row
    update, prompts = document(task, answer(cut, cut=True), answer(cut, cut=True))
    assert "stopped at the length limit" in prompts[1]
    assert update["final"]["missing"] == ["resource_estimates"]
    assert "| storage" not in update["final"]["markdown"]


def test_a_backend_that_answers_in_json_fills_the_bounded_sections(task, monkeypatch):
    monkeypatch.setattr("ima.nodes.documentation.answers_in_json", lambda model: True)
    design = {
        "summary": ["A managed EU pipeline.", "It ingests 12 TB/day.", "It blurs faces first."],
        "plan": ["Depot offload", "Blurring", "Training"],
        "resource_estimates": ["Storage: 1.2 PB", "Cost: USD 41,000 a month"],
    }
    update, prompts = document(task, answer(json.dumps(design)))
    assert '"resource_estimates"' in prompts[0]  # asked for the JSON object
    assert update["final"]["markdown"] == (
        "## Summary\nA managed EU pipeline. It ingests 12 TB/day. It blurs faces first.\n\n"
        "## High-level plan\n1. Depot offload\n2. Blurring\n3. Training\n\n"
        "## Resource estimates\n- Storage: 1.2 PB\n- Cost: USD 41,000 a month"
    )


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        (
            '{"summary": ["One.", "Two.", "Three."], "plan": ["a"]',
            ["summary", "plan", "resource_estimates"],
        ),
        ('{"Summary": "One. Two. Three.", "High-level plan": [], "resources": ["x"]}', ["plan"]),
        ("## 1. Summary\nText.\n## 2. Plan\n- a\n## 3. Resource estimates\n- b", []),
    ],
    ids=["cut-off-json", "json-by-title", "numbered-headings"],
)
def test_reading_a_design_names_what_is_missing(text, missing):
    assert read_design(text).missing == missing


def test_the_design_schema_bounds_every_section():
    schema = design_schema()
    for section in schema["properties"].values():
        assert section["minItems"] >= 2 and section["maxItems"] <= 8
        assert section["items"]["maxLength"] <= 200 and section["items"]["minLength"] > 0
