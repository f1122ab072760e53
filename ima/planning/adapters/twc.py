"""TextWorld Commonsense (the closest offline cousin of the paper's ALFWorld): put each
object where it belongs (`ima.environments.twc`, on Java 17); the reward is the game's own
score; the oracle is the game's gold path; a family is a setting (rooms and objects)."""

from __future__ import annotations

from ima.planning.adapters.catalog import CatalogAdapter


class TWCAdapter(CatalogAdapter):
    name = "twc"
    title = "TextWorld Commonsense"
    family_word = "setting"
    reward_note = (
        "the game's own score at the end of the episode, normalised to 0..1 (it rises as "
        "objects are put away and falls when one is put in a wrong place)"
    )
    oracle_note = "the game's gold path"


ADAPTER = TWCAdapter()
