"""Votes and FINALIZE parsed tolerantly from what small models actually write."""

import pytest
from intrinsic_memory.schedule import parse_flags, parse_vote


@pytest.mark.parametrize(
    ("text", "vote"),
    [
        ("ACCEPT\nThe plan works.", "ACCEPT"),
        ("**Accept.** Budget is met.", "ACCEPT"),
        ("Vote: accepted - all requirements covered", "ACCEPT"),
        ("REJECT: retention is missing", "REJECT"),
        ("I cannot accept this: no EU region.", "REJECT"),
        ("I do not accept the cost estimate.", "REJECT"),
        ("After review, my answer is below.\n\nI accept the proposal.", "ACCEPT"),
        ("The proposal needs more detail on storage.", None),
    ],
)
def test_votes(text, vote):
    assert parse_vote(text) == vote


def test_finalize_and_votes_only_in_voting_turns():
    assert parse_flags("FINALIZE. All agents accepted.", voting=False) == ["FINALIZE"]
    assert parse_flags("Finalize: hand over to DJE", voting=False) == ["FINALIZE"]
    assert parse_flags("We will finalize later.", voting=False) == []
    assert parse_flags("ACCEPT", voting=True) == ["ACCEPT"]
