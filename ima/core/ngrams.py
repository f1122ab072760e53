"""Word n-grams: how much of one text is copied, verbatim, from others.

Words are lower case with punctuation removed ("12 TB/day." -> 12, tb, day); a share counts
n-gram occurrences, so a phrase said twice counts twice. A text shorter than n words has no
n-grams and no share (None).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["NGRAM", "Gram", "copied_share", "ngram_set", "ngrams", "uncopied", "words"]

NGRAM = 8
Gram = tuple[str, ...]
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """Lower-case words with punctuation removed ("12 TB/day." -> 12, tb, day)."""
    return _WORD.findall(text.lower())


def ngrams(text: str, n: int = NGRAM) -> list[Gram]:
    ws = words(text)
    return [tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)]


def ngram_set(texts: Iterable[str], n: int = NGRAM) -> set[Gram]:
    return {g for text in texts for g in ngrams(text, n)}


def copied_share(text: str, sources: set[Gram], n: int = NGRAM) -> float | None:
    """Share of `text`'s n-gram occurrences found in `sources`; None below n words."""
    grams = ngrams(text, n)
    if not grams:
        return None
    return sum(g in sources for g in grams) / len(grams)


def uncopied(text: str, sources: set[Gram], n: int = NGRAM) -> str:
    """`text`'s words outside every n-gram found in `sources`: its runs of own words, one
    line each (so no phrase is read across a cut)."""
    ws = words(text)
    copied = [False] * len(ws)
    for i in range(len(ws) - n + 1):
        if tuple(ws[i : i + n]) in sources:
            copied[i : i + n] = [True] * n
    runs, run = [], []
    for word, is_copied in zip(ws, copied, strict=True):
        if is_copied:
            if run:
                runs.append(" ".join(run))
            run = []
        else:
            run.append(word)
    return "\n".join([*runs, " ".join(run)] if run else runs)
