"""The final design: every required section filled, or asked for once more and then marked
missing in design.md and run.json, never silently empty (fake chat models)."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from conftest import PromptRecorder
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.meeting.final_design import MISSING, design_schema, read_design
from ima.meeting.list_items import list_items
from ima.meeting.nodes.documentation import make_documentation_node
from ima.models import Models
from ima.models.scripted import example_instance

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
    monkeypatch.setattr("ima.meeting.nodes.documentation.answers_in_json", lambda model: True)
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


# ----------------------------------------------------------------------------- clean lists

# The shape of a real run's answer (the embedded model, JSON backend) whose design.md read
# "2. , 2. Data Preprocessing" and "- , Compute: ...": items carrying the model's own numbers
# and the separators of a list it had written as one string.
REAL_RUN = {
    "summary": [
        "The pipeline ingests depot uploads and safety events.",
        "It blurs faces and plates first.",
        "It stays in EU regions.",
    ],
    "plan": ["1. Data Collection", ", 2. Data Preprocessing", ", 3. Model Training"],
    "resource_estimates": [
        "Storage: 360 TB of raw data for 30 days",
        ", Compute: 2 GB/h/day for the fleet, 400 GPU-hours per run",
    ],
}


def test_a_list_the_model_mangled_is_written_clean(task, monkeypatch):
    monkeypatch.setattr("ima.meeting.nodes.documentation.answers_in_json", lambda model: True)
    update, _ = document(task, answer(json.dumps(REAL_RUN)))
    assert update["final"]["markdown"] == (
        "## Summary\nThe pipeline ingests depot uploads and safety events. It blurs faces and "
        "plates first. It stays in EU regions.\n\n"
        "## High-level plan\n1. Data Collection\n2. Data Preprocessing\n3. Model Training\n\n"
        "## Resource estimates\n- Storage: 360 TB of raw data for 30 days\n"
        "- Compute: 2 GB/h/day for the fleet, 400 GPU-hours per run"
    )


@pytest.mark.parametrize(
    ("written", "items"),
    [
        (["1. Ingest 2. Blur 3. Train"], ["Ingest", "Blur", "Train"]),
        (["Ingest, 2. Blur, 3. Train"], ["Ingest", "Blur", "Train"]),
        (["Ingest", "Blur, 3. Train; 4. Deploy"], ["Ingest", "Blur", "Train", "Deploy"]),
        (["1. Ingest", "2. 2. Blur", "3) 3) Train"], ["Ingest", "Blur", "Train"]),
        (
            ["1. Ingestion", "1.1 Depot offload", "1.2. Cellular path", "2. Processing"],
            ["Ingestion: Depot offload; Cellular path", "Processing"],
        ),
        (
            ["1. Ingestion: 1.1 Depot offload 1.2 Cellular path", "2. Processing"],
            ["Ingestion: Depot offload; Cellular path", "Processing"],
        ),
        (
            ["1. Ingestion\n   a) depot Wi-Fi\n   b) cellular\n2. Processing\n   then indexing"],
            ["Ingestion: depot Wi-Fi; cellular", "Processing then indexing"],
        ),
        (
            ["- Storage: 80 TB\n- Compute: 400 GPU-hours", "• Network 5 TB • Egress 1 TB"],
            ["Storage: 80 TB", "Compute: 400 GPU-hours", "Network 5 TB", "Egress 1 TB"],
        ),
        (
            ["Storage 80 TB, - Compute 20 GB. - Network 1 TB"],
            ["Storage 80 TB", "Compute 20 GB.", "Network 1 TB"],
        ),
        (["", "  ", "-", ", ", "2.", None, "1. ;", "Real item"], ["Real item"]),
        (
            [["Depot offload", "Cellular"], {"Storage": "80 TB", "Compute": ["GPU", "CPU"]}],
            ["Depot offload: Cellular", "Storage: 80 TB", "Compute: GPU; CPU"],
        ),
        (  # figures, sentences and text that opens with a bracket or emphasis stay as written
            [
                "2.5 Gbit/s uplinks",
                "99.9% availability",
                "1.2 PB stored",
                "200 vehicles",
                "The fleet has 200. Then we size it",
                "(optional) cold tier",
                "**Storage**: 80 TB",
                "e.g. spot GPUs",
            ],
            [
                "2.5 Gbit/s uplinks",
                "99.9% availability",
                "1.2 PB stored",
                "200 vehicles",
                "The fleet has 200. Then we size it",
                "(optional) cold tier",
                "**Storage**: 80 TB",
                "e.g. spot GPUs",
            ],
        ),
        (
            ["# Storage: 80 TB", ") Compute", "... Network"],
            ["Storage: 80 TB", "Compute", "Network"],
        ),
    ],
    ids=[
        "one-string",
        "comma-numbers",
        "numbers-continue-the-list",
        "numbered-twice",
        "nested-items",
        "nested-in-one-string",
        "indented-lines",
        "bullets-in-strings",
        "bullets-after-separators",
        "empty-items",
        "nested-values",
        "left-alone",
        "leading-punctuation",
    ],
)
def test_list_items_reads_every_shape_into_plain_items(written, items):
    assert list_items(written) == items


def test_a_markdown_answer_gets_the_same_clean_lists():
    text = (
        "## Summary\nA managed EU pipeline. It blurs faces first.\n\n"
        "## High-level plan\n1. Data Collection\n2. , 2. Data Preprocessing\n\n"
        "## Resource estimates\n- , Compute: 2 GB/h/day for the fleet\n* Storage: 360 TB"
    )
    assert read_design(text).render() == (
        "## Summary\nA managed EU pipeline. It blurs faces first.\n\n"
        "## High-level plan\n1. Data Collection\n2. Data Preprocessing\n\n"
        "## Resource estimates\n- Compute: 2 GB/h/day for the fleet\n- Storage: 360 TB"
    )


_FRAGMENTS = st.sampled_from(
    ["1.", "2.", "2)", "1.1", "1.2.", "a)", "-", "*", "•", "\u2013", ",", ", ", ";", ":", ".", ")",
     " ", "\n", "\n  ", "Data", "Collection", "80 TB/day", "2.5 Gbit/s", "99.9%", "USD 45,000",
     "e.g.", "(optional)", "**Storage**"]
)  # fmt: skip
_TEXT = st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), max_size=12)
_ITEM_STARTS = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*[.)]|[a-z]\))(?:\s|$)")


def _opens_text(item: str) -> bool:
    first, kind = item[0], unicodedata.category(item[0])
    if not kind.startswith("P") or kind in ("Ps", "Pi") or first in "\"'`¿¡":
        return True
    return first in "*_" and (item[1:2].isalnum() or item[1:2] == first)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(_FRAGMENTS, _TEXT), max_size=8).map("".join), max_size=6))
def test_no_list_item_starts_with_punctuation_or_its_number_whatever_the_model_writes(written):
    design = read_design(json.dumps({"plan": written, "resource_estimates": written}))
    for line in (line for body in design.bodies.values() for line in body.splitlines()):
        item = re.sub(r"^(?:\d+\. |- )", "", line, count=1)
        assert item.strip() == item and item, line
        assert _opens_text(item) and not _ITEM_STARTS.match(item), line
