"""Notes worth keeping, decided without a model: restated notes reconciled, foreign scripts
and self-repeats cleaned or refused, turns that add nothing new cost no call (the notes are
those a 0.5B model stored in a default meeting)."""

from __future__ import annotations

import json

import pytest
from intrinsic_memory import IntrinsicMemory, MemoryTemplate
from intrinsic_memory.memory import Memory
from intrinsic_memory.notes import (
    SIMILAR_NOTES,
    copies_prompt,
    note_similarity,
    reconcile,
    restates,
    scripts_of,
    strip_foreign,
    strip_repeats,
)
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

# Notes a default meeting on the embedded model stored (12-06, before reconciliation): each
# memory's notes in the order they were written; every list restates itself.
STORED = {
    "CDA": [
        "Design a comprehensive data pipeline for Nordlicht Mobility's 200 autonomous-driving "
        "test vehicles in Germany",
        "Data pipeline design for Nordlicht Mobility's autonomous-driving test vehicles.",
        "Design a comprehensive data pipeline for Nordlicht Mobility's 200 autonomous-driving "
        "test vehicles in Germany, France",
        "Requirements and constraints from the brief matter.",
        "Requirements and constraints from the brief matter",
        "KIA: I propose to retrain perception models every two weeks; each run takes about 400 "
        "A100 GPU-hours",
    ],
    "BOA": ["No full designs.", "No full designs.", "No full designs."],
    "MLA": [
        "retrain perception models every two weeks; each run takes about 400 A100 GPU-hours",
        "Retrained perception models every two weeks; each run takes about 400 A100 GPU-hours",
    ],
    "KIA": [
        "I proposed to retrain perception models every two weeks; each run takes about 400 A100 "
        "GPU-hours, and a candidate must",
        "I agreed to retrain perception models every two weeks; each run takes about 400 A100 "
        "GPU-hours, and a candidate must",
        "No new proposals of your own; my digest is what the others build on.",
    ],
}
# A note, one that restates it saying more (France), and one that restates it saying less.
RESTATED = [STORED["CDA"][0], STORED["CDA"][2], STORED["CDA"][1]]
DISTINCT = [
    "Safety events reach the dashboard within 5 minutes over cellular",
    "Depot Wi-Fi offload carries 12 TB/day overnight",
]


@pytest.mark.parametrize("role", sorted(STORED))
def test_todays_stored_notes_reconciled_as_written_leave_no_pair_that_restates(role):
    sections: list[list[str]] = [[]]
    for note in STORED[role]:
        sections[0].append(note)
        reconcile(sections, fresh={note})
    kept = sections[0]
    assert kept and not any(restates(a, b) for i, a in enumerate(kept) for b in kept[i + 1 :])
    assert role != "CDA" or len(kept) == 3  # the task, the brief's constraints, KIA's point


def test_notes_that_restate_each_other_are_at_least_the_threshold_apart():
    assert note_similarity(RESTATED[0], RESTATED[1]) >= SIMILAR_NOTES
    assert note_similarity(RESTATED[0], RESTATED[2]) >= SIMILAR_NOTES
    assert note_similarity(DISTINCT[0], DISTINCT[1]) < SIMILAR_NOTES
    assert note_similarity(RESTATED[0], DISTINCT[0]) < SIMILAR_NOTES


def test_a_new_note_that_says_more_replaces_the_one_it_restates():
    sections = [[RESTATED[0], DISTINCT[0]], [RESTATED[1]]]
    merged = reconcile(sections, fresh={RESTATED[1]})
    assert merged == 1
    assert sections == [[DISTINCT[0]], [RESTATED[1]]]  # the figure "6 cameras" is kept


def test_a_new_note_that_says_less_is_dropped():
    sections = [[RESTATED[0]], [RESTATED[2], DISTINCT[1]]]
    assert reconcile(sections, fresh={RESTATED[2], DISTINCT[1]}) == 1
    assert sections == [[RESTATED[0]], [DISTINCT[1]]]


def test_a_new_note_placed_before_the_one_it_restates_is_reconciled_too():
    """12-06: an edit added "... a comprehensive summary ... test." above the older "... a
    detailed summary ... test cars.", and both stayed."""
    old = "The team must deliver a detailed summary of the data pipeline for the test cars."
    new = "The team must deliver a comprehensive summary of the data pipeline for the test."
    sections = [[new, old]]
    assert reconcile(sections, fresh={new}) == 1
    assert sections == [[old]]  # the new one says no more


def test_old_notes_are_never_merged_with_each_other():
    sections = [[RESTATED[0], RESTATED[1]]]
    assert reconcile(sections, fresh=set()) == 0
    assert sections == [[RESTATED[0], RESTATED[1]]]


def test_a_word_of_another_script_is_removed_and_a_note_mostly_in_it_refused():
    latin = scripts_of("Each vehicle carries 6 cameras and 1 roof lidar.")
    assert strip_foreign("camera counts, lidar ranges,\u96f7\u8fbe", latin) == (
        "camera counts, lidar ranges",
        True,
    )
    assert strip_foreign("\u96f7\u8fbe\u6570\u636e lidar", latin) == ("", True)
    assert strip_foreign("80 TB/day recorded", latin) == ("80 TB/day recorded", False)


def test_a_task_in_another_script_keeps_its_own_and_latin_names():
    chinese = scripts_of("\u6bcf\u8f86\u8f66\u6709\u516d\u4e2a\u6444\u50cf\u5934\u3002")
    note = "\u4f7f\u7528 Kafka \u5904\u7406\u4e8b\u4ef6"
    assert strip_foreign(note, chinese) == (note, False)


def test_a_note_that_repeats_itself_is_cut_where_the_repeat_starts():
    assert strip_repeats("camera counts, camera counts, camera counts") == ("", True)
    assert strip_repeats("Budget is USD 45,000 a month. Budget is USD 45,000 a month.") == (
        "Budget is USD 45,000 a month.",
        True,
    )
    assert strip_repeats("Raw data 12 TB/day, blurred data 12 TB/day") == (
        "Raw data 12 TB/day, blurred data 12 TB/day",
        False,
    )


TEMPLATE = "## Requirements\n- <requirement>\n## Decisions\n- <decision>"


def _answer(edits: list[dict]) -> AIMessage:
    return AIMessage(
        json.dumps({"edits": edits}),
        usage_metadata={"input_tokens": 50, "output_tokens": 20, "total_tokens": 70},
    )


def test_an_edit_that_restates_a_note_is_merged_and_counted():
    model = FakeMessagesListChatModel(
        responses=[_answer([{"to": "decisions", "add": RESTATED[1]}])]
    )
    memory = IntrinsicMemory(model, TEMPLATE, memory_tokens=256)
    held = Memory(memory.template, ((RESTATED[0],), ()))
    result = memory.update(held, "We now count 6 cameras on each vehicle for the pipeline.")
    assert result.memory.notes == ((), (RESTATED[1],))
    assert result.repairs.merged_notes == 1


def test_an_edit_that_adds_an_older_note_again_keeps_it_once():
    """12-07, make run: the Knowledge Integration Agent held "The team must deliver a summary
    of the round ..." twice, word for word, in two sections: as a note held before, neither
    copy was new, so neither was compared."""
    note = "The team must deliver a summary of the round in a short, structured digest."
    model = FakeMessagesListChatModel(responses=[_answer([{"to": "decisions", "add": note}])])
    memory = IntrinsicMemory(model, TEMPLATE, memory_tokens=256)
    held = Memory(memory.template, ((note,), ()))
    result = memory.update(held, "The digest lists the round's proposals and open questions.")
    assert result.memory.notes == ((note,), ())
    assert result.repairs.merged_notes == 1


def test_an_edit_with_a_foreign_word_is_cleaned_and_counted():
    model = FakeMessagesListChatModel(
        responses=[
            _answer([{"to": "requirements", "add": "lidar ranges up to 200 m,\u96f7\u8fbe"}])
        ]
    )
    memory = IntrinsicMemory(model, TEMPLATE, memory_tokens=256)
    held = Memory(memory.template, (("cameras: 6 per vehicle",), ()))
    result = memory.update(held, "The lidar ranges matter for perception quality checks.")
    assert result.memory.notes == (("cameras: 6 per vehicle", "lidar ranges up to 200 m"), ())
    assert result.repairs.foreign_script == 1


def test_a_turn_that_adds_nothing_new_costs_no_call():
    model = FakeMessagesListChatModel(responses=[])  # any call would fail
    memory = IntrinsicMemory(model, TEMPLATE, memory_tokens=256)
    held = Memory(memory.template, (("Depot Wi-Fi offload carries 12 TB/day overnight",), ()))
    assert not memory.is_news(held, "Depot Wi-Fi offload: 12 TB/day, overnight.")
    result = memory.update(held, "Depot Wi-Fi offload: 12 TB/day, overnight.")
    assert not result.changed and result.usage["calls"] == 0
    assert memory.is_news(held, "Cellular clips of 20 MB go to the dashboard in 5 minutes.")
    assert memory.is_news(Memory(memory.template), "ok")  # an empty memory takes anything


def test_templates_in_the_task_language_set_the_scripts_without_a_source():
    template = MemoryTemplate.from_markdown("## Exigences\n- <exigence>")
    assert scripts_of(template.markdown()) == frozenset({"LATIN"})


# The standing text of a default meeting's update prompt (12-07): the Knowledge Integration
# Agent's role, and the roster the task every agent shares names.
KIA_ROLE = (
    "You are the Knowledge Integration Agent (KIA). You speak after each round of workers. "
    "You summarise the round in a short, structured digest. You add no new proposals of "
    "your own; your digest is what the others build on."
)
TASK = (
    "Design a data pipeline for 200 test vehicles; depot Wi-Fi offload carries 12 TB/day.\n"
    "Agents: CDA (Conversation Delegation Agent), BOA (Business Objectives Agent), DEA (Data "
    "Engineer Agent), KIA (Knowledge Integration Agent)."
)
DIGEST = "Agreed: Kinesis carries safety events; depot Wi-Fi offload carries 12 TB/day to S3."


@pytest.mark.parametrize(
    ("note", "copied"),
    [
        ("No new proposals of your own; your digest is what the others build on.", True),
        ("CDA (Conversation Delegation Agent), BOA (Business Objectives Agent)", True),
        ("KIA (Knowledge Integration Agent)", True),  # shorter than an n-gram: whole
        ("depot Wi-Fi offload carries 12 TB/day", False),  # the task's, but said in the turn
        ("Kinesis carries safety events to the dashboard", False),  # the turn's own
    ],
)
def test_a_note_copied_from_the_role_or_task_and_not_the_turn_copies_the_prompt(note, copied):
    assert copies_prompt(note, (KIA_ROLE, TASK), DIGEST) is copied


def test_an_update_refuses_a_note_copied_from_its_role_and_keeps_one_of_the_task():
    """A note taken from the agent's role and not from its output is refused; the output's
    own note is kept, and so is a note of the task, which is what a memory keeps."""
    role_note = "No new proposals of your own; your digest is what the others build on."
    task_note = "Design a data pipeline for 200 test vehicles"
    own_note = "Kinesis carries safety events to the dashboard"
    edits = [{"to": "decisions", "add": n} for n in (role_note, own_note)]
    edits.append({"to": "requirements", "add": task_note})
    model = FakeMessagesListChatModel(responses=[_answer(edits)])
    memory = IntrinsicMemory(model, TEMPLATE, memory_tokens=256)
    held = Memory(memory.template, (("depot Wi-Fi offload carries 12 TB/day",), ()))
    result = memory.update(held, DIGEST, role=KIA_ROLE, system=TASK)
    assert result.memory.notes == (
        ("depot Wi-Fi offload carries 12 TB/day", task_note),
        (own_note,),
    )
    assert result.repairs.copied_prompt == 1
