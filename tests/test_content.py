"""Content metrics against hand-computed values: n-grams, parroting, repetition and the
brief-figure grounding of design and specification."""

from __future__ import annotations

import pytest

from ima.core.errors import UserError
from ima.core.ngrams import copied_share, ngram_set, ngrams, uncopied, words
from ima.measures.content import (
    content_metrics,
    content_summary,
    figure_grounding,
    instruction_texts,
    parroting_by_turn,
    repetition_by_turn,
    state_content,
)
from ima.tasks import KeyFigure, Task
from ima.tasks.evidence import figure_pattern

ALPHABET = "alpha bravo charlie delta echo foxtrot golf hotel"  # exactly one 8-gram


def turn(speaker: str, content: str) -> dict:
    return {"speaker": speaker, "content": content}


def test_words_are_lower_case_without_punctuation():
    assert words("Hello, World! 12 TB/day; re-use_it.") == [
        "hello",
        "world",
        "12",
        "tb",
        "day",
        "re",
        "use",
        "it",
    ]
    assert ngrams("one two three") == []  # fewer than 8 words: no 8-gram
    assert len(ngrams(ALPHABET + " india juliet")) == 3


def test_copied_share_counts_occurrences():
    # 10 words -> 3 8-grams; only the first is in the source
    assert copied_share(ALPHABET + " india juliet", ngram_set([ALPHABET])) == pytest.approx(1 / 3)
    # punctuation and case do not hide a copy
    assert (
        copied_share("ALPHA, bravo; Charlie delta echo foxtrot golf hotel!", ngram_set([ALPHABET]))
        == 1.0
    )
    assert copied_share("too short to count", ngram_set([ALPHABET])) is None


def test_uncopied_keeps_the_runs_of_own_words_apart():
    source = ngram_set(["the volumes add up every day"], 3)
    text = "Clips are lost: the volumes add up every day, and no checksum"
    assert uncopied(text, source, 3) == "clips are lost\nand no checksum"
    assert uncopied("the volumes add up", source, 3) == ""


def test_parroting_per_turn_uses_the_prompt_and_every_earlier_turn():
    prompt = ngram_set([ALPHABET + " india juliet"])
    turns = [
        turn("A", ALPHABET + " xray yankee"),  # 1 of 3 grams from the prompt
        turn("B", ALPHABET + " xray yankee"),  # all 3 copied from turn 1
        turn("HUMAN", "kilo lima mike november oscar papa quebec romeo"),  # not scored
        turn("A", "kilo lima mike november oscar papa quebec romeo sierra"),  # 1 of 2 from HUMAN
        turn("C", "fine"),  # too short: no share
    ]
    assert parroting_by_turn(turns, prompt) == [pytest.approx(1 / 3), 1.0, None, 0.5, None]


def test_repetition_counts_only_the_same_speakers_earlier_turns():
    turns = [
        turn("A", ALPHABET + " india"),  # first turn of A: nothing to repeat
        turn("B", ALPHABET + " india"),  # B repeats A, not itself: first turn of B
        turn("A", ALPHABET + " xray yankee zulu"),  # grams: 4, of which 1 said by A before
        turn("B", "new words entirely here and nothing else at all"),  # 0 of 2
    ]
    assert repetition_by_turn(turns) == [None, None, 0.25, 0.0]


@pytest.mark.parametrize(
    ("spelling", "text", "found"),
    [
        ("99.9", "a 99.9% available path", True),
        ("99.9", "a 99.95% available path", False),
        ("5 year", "kept five or 5 years", True),
        ("5 year", "kept 1.5 years", False),
        ("5 year", "kept 15 years", False),
        ("45,000", "within USD 45,000.", True),
        ("45,000", "within USD 145,000", False),
        ("45,000", "within 45,0000", False),
        ("5 min", "a 5-minute target", True),
        ("30 day", "a 30-day retention", True),
        ("30 day", "a 300 days retention", False),
        ("two weeks", "every two-weeks", True),
    ],
)
def test_figure_spellings_match_at_number_boundaries(spelling, text, found):
    assert bool(figure_pattern(spelling).search(text.lower())) is found


FIGURES = [
    KeyFigure(id="budget", text="a cloud budget of USD 45,000", values=["45,000", "45k"]),
    KeyFigure(
        id="retention",
        text="unblurred raw data deleted after 30 days",
        values=["30 day"],
        limit="at_most",
    ),
    KeyFigure(id="events", text="safety-event records kept 5 years", values=["5 year"]),
    KeyFigure(id="team", text="6 engineers", values=["6 engineers"]),
]


def test_grounding_reports_design_spec_both_and_what_the_brief_contradicts(task: Task):
    figures = task.model_copy(update={"key_figures": FIGURES})
    design = "Raw data is deleted after 60 days; events are kept 5 years; cost 40k of the 45k."
    spec = {"storage": {"retention_days": 365}, "compliance": ["events kept 5 years"]}
    g = figure_grounding(figures, design, spec)
    assert g["in_design"] == ["budget", "events"]
    assert g["in_spec"] == ["events"]  # key names never count
    assert g["in_both"] == ["events"]
    assert g["conflicts"] == ["60 days (unblurred raw data deleted after 30 days)"]
    assert g["missing"] == ["retention", "team"]
    assert (g["design"], g["spec"], g["both"]) == (0.5, 0.25, 0.25)
    agreed = figure_grounding(figures, "Raw data is deleted after 30 days.", None)
    assert agreed["in_design"] == ["retention"] and agreed["conflicts"] == []
    assert (
        figure_grounding(task.model_copy(update={"key_figures": []}), design, spec)["design"]
        is None
    )


def test_the_bundled_task_lists_the_briefs_key_figures(task: Task):
    ids = {f.id for f in task.key_figures}
    assert {"fleet", "recorded", "uploaded", "dashboard-latency", "search-latency", "gpu-hours",
            "raw-retention", "training-retention", "event-retention", "availability", "backlog",
            "budget", "team"} <= ids  # fmt: skip
    # every figure is stated by the brief itself in one of its spellings
    unstated = figure_grounding(task, task.description, None)["missing"]
    assert unstated == []


def test_a_turn_that_copies_its_instruction_is_parroting(task: Task):
    instruction = task.schedule.phases[0].instruction
    assert instruction in instruction_texts(task)
    metrics = content_metrics(
        task,
        design="",
        spec=None,
        turns=[turn("BOA", instruction), turn("DEA", "We upload sixty gigabytes per car " * 3)],
    )
    assert metrics["parroting"]["turns"] == pytest.approx(0.5)  # 100% and 0%
    assert metrics["parroting"]["turns_scored"] == 2
    assert metrics["repetition"]["turns"] is None  # nobody spoke twice
    assert metrics["parroting"]["design"] is None  # no design text


def test_without_a_transcript_only_the_design_is_measured(task: Task):
    design = task.description  # a design that restates the brief word for word
    metrics = content_metrics(task, design=design, spec=None, turns=None)
    assert metrics["parroting"]["turns"] is None and metrics["parroting"]["design"] is None
    assert metrics["in_view"] is None  # no transcript: nothing to say what prompts held
    assert metrics["parroting"]["design_from_prompt"] == 1.0
    assert metrics["grounding"]["design"] == 1.0


def test_state_content_and_summary_for_ima_show(task: Task, run_graph):
    values = run_graph(turn_cap=6)
    metrics = state_content(task, values)
    assert metrics["parroting"]["turns_scored"] >= 1
    summary = content_summary(metrics)
    total = len(task.key_figures)
    assert summary["figures_in_design"].endswith(f"/{total}")
    assert set(summary) == {
        "figures_in_design",
        "figure_conflicts",
        "parroting_turns_pct",
        "parroting_design_pct",
        "repetition_turns_pct",
        "in_view_last_turn_pct",
        "design_junk_lines",
        "components_justified",
        "requirements_addressed",
        "requirements_open",
        "unit_errors",
        "memory_restated_pairs",
        "memory_foreign_script",
    }
    assert summary["design_junk_lines"] == 0
    assert 0 <= summary["parroting_turns_pct"] <= 100
    assert 0 <= summary["in_view_last_turn_pct"] <= 100


def test_unknown_task_reference_is_a_user_error():
    from ima.evals.calibration import load_set

    with pytest.raises(UserError, match="unknown task"):
        load_set("no-such-task")
