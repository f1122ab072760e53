"""The memory itself: bounded, never stored cut off, edits applied exactly (fake chat models
that write too much, stop at their cap, or answer with malformed edits)."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from ima.core.tokens import count_tokens
from ima.method.memory import Memory, MemoryTemplate
from ima.method.memory_update import IntrinsicMemory, generic_template
from ima.tasks import load_task

TEMPLATE = "## Requirements\n- <requirement with its figure>\n## Decisions\n- <decision>"


def reply(text: str, *, cut: bool = False, output_tokens: int = 20) -> AIMessage:
    return AIMessage(
        text,
        usage_metadata={"input_tokens": 100, "output_tokens": output_tokens, "total_tokens": 120},
        response_metadata={"finish_reason": "length" if cut else "stop"},
    )


def manager(*answers: AIMessage, **kwargs) -> IntrinsicMemory:
    return IntrinsicMemory(FakeMessagesListChatModel(responses=list(answers)), TEMPLATE, **kwargs)


def test_a_template_is_its_markdown_sections_and_a_title_heading_is_not_one():
    template = MemoryTemplate.from_markdown(
        "# My working memory\n## Role and priorities\n- <what I own>\n## Decisions agreed\n"
    )
    assert [(s.title, s.key, s.hint) for s in template.sections] == [
        ("Role and priorities", "role_priorities", "<what I own>"),
        ("Decisions agreed", "decisions_agreed", ""),
    ]
    plain = MemoryTemplate.from_markdown("keep what matters")
    assert [(s.title, s.hint) for s in plain.sections] == [("Notes", "keep what matters")]
    with pytest.raises(ValueError, match="at least one heading"):
        MemoryTemplate.from_markdown("  \n")


def test_a_memory_renders_to_markdown_and_reads_back_the_same():
    memory = Memory(generic_template(), ((), (), ("80 TB/day raw",), (), (), (), ("use S3",)))
    text = memory.render()
    assert text == (
        "## Key requirements and constraints\n- 80 TB/day raw\n"
        "## Decisions and current status\n- use S3"
    )
    assert Memory.parse(text, generic_template()) == memory


def test_an_over_long_rewrite_is_stored_within_budget_in_whole_notes():
    """A model that ignores every limit: far too many notes, each far too long."""
    sentence = "The pipeline must ingest 80 TB per day of raw sensor data from the fleet. "
    answer = {"requirements": [sentence * 6] * 12, "decisions": [f"decision {i}" for i in range(9)]}
    memory = manager(reply(json.dumps(answer)), tokens=96)
    result = memory.update("", "my turn")
    assert count_tokens(result.text) <= 96
    limits = memory.limits
    for notes in result.memory.notes:
        assert len(notes) <= limits.notes_per_section
        assert all(len(n) <= limits.note_chars for n in notes)
        assert all(n.endswith((".", "\u2026")) or not n.startswith("The") for n in notes)
    assert result.repairs.shortened_notes and result.repairs.dropped_notes
    assert not result.cut_off and not result.repairs.unusable


@pytest.mark.parametrize(
    "answer",
    [
        '{"requirements": ["raw data 80 TB/day"], "decisions": ["use S3 with lifecy',
        "## Requirements\n- raw data 80 TB/day\n## Decisions\n- use S3 with lifecy",
    ],
    ids=["json", "markdown"],
)
def test_an_answer_cut_at_the_cap_keeps_its_complete_sections_and_carries_the_rest(answer):
    previous = "## Requirements\n- old requirement\n## Decisions\n- keep the old decision"
    result = manager(reply(answer, cut=True)).update(previous, "my turn")
    assert result.cut_off
    assert (
        result.text
        == "## Requirements\n- raw data 80 TB/day\n## Decisions\n- keep the old decision"
    )
    assert result.repairs.carried_sections == 1


def test_an_answer_at_its_output_cap_counts_as_cut_off_even_without_a_finish_reason():
    memory = manager(tokens=64)
    at_cap = AIMessage(
        '{"requirements": ["a"], "decisions": ["b"',
        usage_metadata={
            "input_tokens": 9,
            "output_tokens": memory.output_cap,
            "total_tokens": 9 + memory.output_cap,
        },
    )
    memory.model = FakeMessagesListChatModel(responses=[at_cap])
    result = memory.update("## Decisions\n- earlier", "turn")
    assert result.cut_off and result.text == "## Requirements\n- a\n## Decisions\n- earlier"


def test_an_unusable_rewrite_leaves_the_memory_as_it_was():
    previous = "## Decisions\n- keep this"
    result = manager(reply("I think the team did well today.")).update(previous, "turn")
    assert result.text == previous and result.repairs.unusable


def test_edits_add_replace_and_remove_by_the_numbers_shown():
    edits = {
        "edits": [
            {"to": "requirements", "add": "latency under 5 minutes"},
            {"in": "decisions", "replace": 1, "with": "object storage: S3"},
            {"in": "decisions", "remove": 2},
        ]
    }
    memory = manager(reply(json.dumps(edits)), mode="edit", tokens=256)
    previous = "## Requirements\n- 80 TB/day\n## Decisions\n- storage: undecided\n- use HDFS"
    shown = memory.messages(previous, "turn")[-1].content
    assert "- [decisions] Decisions: <decision>\n\n" in shown  # before the memory: cacheable
    assert "## Decisions [decisions]\n1. storage: undecided\n2. use HDFS" in shown
    result = memory.update(previous, "turn")
    assert result.text == (
        "## Requirements\n- 80 TB/day\n- latency under 5 minutes\n## Decisions\n- object storage: S3"
    )
    assert result.repairs.malformed_edits == 0


def test_edit_mode_writes_an_empty_memory_whole_then_edits_it():
    first = reply('{"requirements": ["80 TB/day"], "decisions": ["use S3"]}')
    then = reply('{"edits": [{"in": "decisions", "replace": 1, "with": "use S3 Glacier"}]}')
    memory = manager(first, then, mode="edit")
    assert "Write your working memory" in memory.messages("", "turn")[-1].text
    written = memory.update("", "turn 1")
    assert written.text == "## Requirements\n- 80 TB/day\n## Decisions\n- use S3"
    assert "Make 1 to 3 edits" in memory.messages(written.memory, "turn")[-1].text
    edited = memory.update(written.memory, "turn 2")
    assert edited.text == "## Requirements\n- 80 TB/day\n## Decisions\n- use S3 Glacier"


def test_malformed_edits_and_edits_aimed_at_another_agent_change_nothing_and_are_counted():
    edits = {
        "edits": [
            {"to": "nowhere", "add": "x"},  # no such section
            {"in": "decisions", "remove": 7},  # no such note
            {"agent": "DEA", "to": "decisions", "add": "HACKED"},  # another agent's memory
            {"in": "decisions", "replace": "one", "with": "y"},  # not a number
            "remove everything",
            {"to": "decisions", "add": "kept"},
        ]
    }
    previous = "## Decisions\n- storage: S3"
    result = manager(reply(json.dumps(edits)), mode="edit").update(previous, "turn")
    assert result.text == "## Decisions\n- storage: S3\n- kept"
    assert result.repairs.malformed_edits == 5


def test_an_edit_to_a_full_section_drops_its_oldest_note():
    memory = manager(reply('{"edits": [{"to": "decisions", "add": "newest"}]}'), mode="edit")
    full = Memory.parse(
        "## Decisions\n" + "".join(f"- d{i}\n" for i in range(memory.limits.notes_per_section)),
        memory.template,
    )
    notes = memory.update(full, "turn").memory.notes[1]
    assert notes[-1] == "newest" and notes[0] != "d0"
    assert len(notes) == memory.limits.notes_per_section


def test_not_an_edit_answer_leaves_the_memory_as_it_was():
    previous = "## Decisions\n- storage: S3"
    result = manager(reply("Sure! Here are my edits"), mode="edit").update(previous, "turn")
    assert result.text == previous and result.repairs.unusable


def test_the_async_update_gives_what_the_sync_one_gives():
    answer = reply('{"requirements": ["80 TB/day"], "decisions": ["use S3"]}')
    sync = manager(answer).update("", "turn", role="You are DEA.")
    asynchronous = asyncio.run(manager(answer).aupdate("", "turn", role="You are DEA."))
    assert (sync.text, sync.repairs, sync.cut_off) == (
        asynchronous.text,
        asynchronous.repairs,
        asynchronous.cut_off,
    )
    assert sync.usage["output_tokens"] == 20


def test_the_budget_the_prompt_asks_for_is_the_budget_the_memory_keeps():
    memory = IntrinsicMemory(FakeMessagesListChatModel(responses=[reply("{}")]), tokens=200)
    prompt = memory.messages("", "turn")[-1].content
    limits = memory.limits
    assert f"At most {limits.notes_per_section} notes per section" in prompt
    assert f"at most {limits.note_words} words" in prompt
    brief = " ".join(load_task("data-pipeline").description.split())
    notes = [brief[i * 40 : i * 40 + limits.note_chars] for i in range(20)]
    full = Memory(
        memory.template,
        tuple(tuple(notes[: limits.notes_per_section]) for _ in memory.template.keys),
    )
    assert full.tokens() <= 200  # a memory filled to every limit still fits its budget
