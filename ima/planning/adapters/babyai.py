"""BabyAI (in the paper authors' newer public code): minigrid's levels told in words
(`ima.environments.babyai`); actions are words, an invalid one is told why; the reward is
success (BabyAI has no partial credit); the oracle is BabyAI's bot; a family is a level."""

from __future__ import annotations

from ima.planning.adapters.catalog import CatalogAdapter


class BabyAIAdapter(CatalogAdapter):
    name = "babyai"
    title = "BabyAI"
    family_word = "level"
    reward_note = (
        "success: 1 once the mission is accomplished, else 0 (BabyAI has no partial credit)"
    )
    oracle_note = "BabyAI's bot"


ADAPTER = BabyAIAdapter()
