"""The memory itself: bounded, never stored cut off, edits applied exactly (fake chat models
that write too much, stop at their cap, or answer with malformed edits)."""

from __future__ import annotations

import asyncio
import json

import pytest
from intrinsic_memory import IntrinsicMemory, MemoryTemplate
from intrinsic_memory.memory import Memory, edit_schema, rewrite_schema
from intrinsic_memory.tokens import count_tokens
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

BRIEF = """A fleet of 200 test vehicles records 50 GB/h each, 80 TB/day in all; each vehicle
keeps 4 TB on its onboard SSD and uploads about 60 GB per day over depot Wi-Fi, 12 TB/day for
the fleet. Safety events must reach the dashboard within 5 minutes, uploaded data must be
searchable within 12 hours, and the platform must stay within USD 45,000 a month."""
# An agent's turn with something new to keep (a turn that adds nothing costs no update).
TURN = "We agreed to keep raw sensor uploads for 30 days in object storage on EU regions."
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
    memory = Memory(MemoryTemplate.generic(), ((), (), ("80 TB/day raw",), (), (), (), ("use S3",)))
    text = memory.render()
    assert text == (
        "## Key requirements and constraints\n- 80 TB/day raw\n"
        "## Decisions and current status\n- use S3"
    )
    assert Memory.parse(text, MemoryTemplate.generic()) == memory


def test_an_over_long_rewrite_is_stored_within_budget_in_whole_notes():
    """A model that ignores every limit: far too many notes, each far too long."""
    answer = {
        "requirements": [
            f"Batch {i}: " + " ".join(f"term{i}x{j}" for j in range(60)) for i in range(12)
        ],
        "decisions": [f"decision {i}" for i in range(9)],
    }
    memory = manager(reply(json.dumps(answer)), memory_tokens=96)
    result = memory.update("", TURN)
    assert count_tokens(result.text) <= 96
    limits = memory.limits
    for notes in result.memory.notes:
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
    result = manager(reply(answer, cut=True), mode="rewrite").update(previous, TURN)
    assert result.cut_off
    assert (
        result.text
        == "## Requirements\n- raw data 80 TB/day\n## Decisions\n- keep the old decision"
    )
    assert result.repairs.carried_sections == 1


def test_an_answer_at_its_output_cap_counts_as_cut_off_even_without_a_finish_reason():
    memory = manager(memory_tokens=64, mode="rewrite")
    at_cap = AIMessage(
        '{"requirements": ["a"], "decisions": ["b"',
        usage_metadata={
            "input_tokens": 9,
            "output_tokens": memory.output_cap,
            "total_tokens": 9 + memory.output_cap,
        },
    )
    memory.model = FakeMessagesListChatModel(responses=[at_cap])
    result = memory.update("## Decisions\n- earlier", TURN)
    assert result.cut_off and result.text == "## Requirements\n- a\n## Decisions\n- earlier"


def test_an_unusable_rewrite_leaves_the_memory_as_it_was():
    previous = "## Decisions\n- keep this"
    result = manager(reply("I think the team did well today.")).update(previous, TURN)
    assert result.text == previous and result.repairs.unusable


def test_edits_add_and_replace_by_the_numbers_shown_and_nothing_is_removed_by_name():
    """A removal is not offered (LangMem's default): a small model given one empties its
    memory; a full memory makes room by the budget rule instead."""
    edits = {
        "edits": [
            {"to": "requirements", "add": "latency under 5 minutes"},
            {"in": "decisions", "replace": 1, "with": "object storage: S3"},
            {"in": "decisions", "remove": 2},
        ]
    }
    memory = manager(reply(json.dumps(edits)), mode="edit", memory_tokens=256)
    previous = "## Requirements\n- 80 TB/day\n## Decisions\n- storage: undecided\n- use HDFS"
    shown = memory.messages(previous, "turn")[-1].content
    assert "- [decisions] Decisions: <decision>\n\n" in shown  # before the memory: cacheable
    assert "## Decisions [decisions]\n1. storage: undecided\n2. use HDFS" in shown
    result = memory.update(previous, TURN)
    assert result.text == (
        "## Requirements\n- 80 TB/day\n- latency under 5 minutes\n"
        "## Decisions\n- object storage: S3\n- use HDFS"
    )
    assert result.repairs.malformed_edits == 1  # the removal
    schema = json.dumps(edit_schema(memory.read(previous), memory.limits, 3))
    assert '"remove"' not in schema and "remove" not in shown


def test_edit_mode_writes_an_empty_memory_whole_then_edits_it():
    first = reply('{"requirements": ["80 TB/day"], "decisions": ["use S3"]}')
    then = reply('{"edits": [{"in": "decisions", "replace": 1, "with": "use S3 Glacier"}]}')
    memory = manager(first, then, mode="edit")
    assert "Write your working memory" in memory.messages("", "turn")[-1].text
    written = memory.update("", TURN)
    assert written.text == "## Requirements\n- 80 TB/day\n## Decisions\n- use S3"
    assert "Make 1 to 3 edits" in memory.messages(written.memory, "turn")[-1].text
    edited = memory.update(written.memory, "We moved the raw uploads to S3 Glacier after 30 days.")
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
    result = manager(reply(json.dumps(edits)), mode="edit").update(previous, TURN)
    assert result.text == "## Decisions\n- storage: S3\n- kept"
    assert result.repairs.malformed_edits == 5


def test_sections_share_the_room_and_a_full_memory_drops_the_oldest_note_of_the_fullest():
    decision = "newest decision: object storage with lifecycle rules moving raw data to archive"
    memory = manager(
        reply(json.dumps({"edits": [{"to": "decisions", "add": decision}]})), mode="edit"
    )
    requirements = [f"requirement {i}: ingest {i} TB per day of raw data" for i in range(40)]
    room = Memory(memory.template, ((), ()))
    while True:  # fill one section until the next note would not fit
        grown = Memory(memory.template, (tuple(requirements[: len(room.notes[0]) + 1]), ()))
        if grown.tokens() > memory.memory_tokens:
            break
        room = grown
    assert len(room.notes[0]) > 2  # one section may take most of the room
    result = memory.update(room, TURN)
    requirements_kept, decisions = result.memory.notes
    dropped = result.repairs.dropped_notes
    assert decisions == (decision,) and dropped >= 1
    assert requirements_kept == room.notes[0][dropped:]  # the oldest notes of the fullest went
    assert result.memory.tokens() <= memory.memory_tokens


def test_a_rewrite_over_the_budget_keeps_the_newest_notes_of_each_section():
    topics = ["cameras", "lidar", "radar", "uplink", "depots", "cellular", "GPU", "labels", "audit"]
    notes = [{"section": "requirements", "note": f"requirement on {t}"} for t in topics]
    notes += [{"section": "decisions", "note": f"decision {i}"} for i in range(3)]
    result = manager(reply(json.dumps({"notes": notes})), memory_tokens=64).update("", TURN)
    requirements, decisions = result.memory.notes
    assert decisions == ("decision 0", "decision 1", "decision 2")
    assert len(requirements) > 3 and requirements[-1] == "requirement on audit"
    assert result.memory.tokens() <= 64
    assert result.repairs.dropped_notes == 9 - len(requirements)


def test_not_an_edit_answer_leaves_the_memory_as_it_was():
    previous = "## Decisions\n- storage: S3"
    result = manager(reply("Sure! Here are my edits"), mode="edit").update(previous, TURN)
    assert result.text == previous and result.repairs.unusable


def test_the_async_update_gives_what_the_sync_one_gives():
    answer = reply('{"requirements": ["80 TB/day"], "decisions": ["use S3"]}')
    sync = manager(answer).update("", TURN, role="You are DEA.")
    asynchronous = asyncio.run(manager(answer).aupdate("", TURN, role="You are DEA."))
    assert (sync.text, sync.repairs, sync.cut_off) == (
        asynchronous.text,
        asynchronous.repairs,
        asynchronous.cut_off,
    )
    assert sync.usage["output_tokens"] == 20


def test_the_budget_the_prompt_asks_for_is_the_budget_the_memory_keeps():
    model = FakeMessagesListChatModel(responses=[reply("{}")])
    memory = IntrinsicMemory(model, memory_tokens=200, mode="rewrite")
    prompt = memory.messages("", "turn")[-1].content
    limits = memory.limits
    assert f"At most {limits.max_notes} notes in all" in prompt
    # edit mode's first write holds what one turn gives: twice the notes an edit may add
    first = IntrinsicMemory(model, memory_tokens=200).messages("", "turn")[-1].content
    assert "At most 6 notes in all" in first
    assert f"at most {limits.note_words} words" in prompt
    brief = " ".join(BRIEF.split())
    notes = [brief[i * 40 : i * 40 + limits.note_chars] for i in range(limits.max_notes)]
    keys = memory.template.keys
    full = Memory(
        memory.template,
        tuple(tuple(notes[i :: len(keys)]) for i in range(len(keys))),
    )
    assert full.tokens() <= 200  # a rewrite filled to every limit still fits its budget
    schema = rewrite_schema(memory.template, limits)
    assert schema["properties"]["notes"]["maxItems"] == limits.max_notes
