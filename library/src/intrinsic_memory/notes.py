"""Notes worth keeping, decided without a model.

A small model writes notes that restate notes it already holds, slips a word of another
script into an English note ("camera counts, lidar ranges,雷达"), or loops ("camera counts,
camera counts"). LangMem and mem0 reconcile a new memory with the old ones through an extra
LLM call; these rules cost nothing and give the same answer every time:

- *Similar*: two notes restate each other when their token Jaccard similarity (shared
  lower-case words over all their words) is at least `SIMILAR_NOTES`. Of such a pair the
  newer note replaces the older when it says something the older does not (a figure, or
  more words); otherwise the newer one is dropped.
- *Script*: a note keeps only letters of the scripts its source uses (the agent's own
  output; Latin always, as technical names are written in it everywhere). Letters of any
  other script are removed; a note that loses more than half its words, or keeps fewer
  than `MIN_WORDS`, is refused.
- *Repeats*: a note is cut where it starts to repeat itself (a phrase said again right
  after itself, or a run of `REPEAT_WORDS` words said a second time); a note left with
  fewer than `MIN_WORDS` words is refused.
- *Prompt*: a note copied from the agent's role in the update prompt rather than drawn from
  the agent's output is refused: half or more of its word `PROMPT_NGRAM`-grams are in the
  role and fewer than half in the output. The agent is told its role at every turn; a note
  of it is no memory of its own. The task is what a memory keeps: a note of it stays.
- *Novelty*: an output adds nothing new to a memory when fewer than `MIN_NEW_WORDS` of its
  words (figures, and words of three letters or more outside `STOP_WORDS`) are missing
  from the memory: such a turn costs no update call.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "COPIED_SHARE",
    "MIN_NEW_WORDS",
    "PROMPT_NGRAM",
    "SIMILAR_NOTES",
    "copies_prompt",
    "new_words",
    "note_similarity",
    "restates",
    "scripts_of",
    "strip_foreign",
]

SIMILAR_NOTES = 0.6
PROMPT_NGRAM = 4
COPIED_SHARE = 0.5
REPEAT_WORDS = 5
MIN_WORDS = 3
MIN_NEW_WORDS = 3
_WORD = re.compile(r"\w+")
_TRAILING = " ,;:-\u2013\u2014/("
STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "are",
        "was",
        "were",
        "will",
        "would",
        "should",
        "could",
        "can",
        "its",
        "our",
        "your",
        "their",
        "they",
        "them",
        "then",
        "than",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "also",
        "each",
        "every",
        "all",
        "any",
        "some",
        "such",
        "not",
        "but",
        "has",
        "have",
        "had",
        "been",
        "being",
        "who",
        "whom",
        "which",
        "what",
        "when",
        "where",
        "why",
        "how",
        "more",
        "most",
        "must",
        "may",
        "might",
        "per",
        "via",
        "use",
        "used",
        "using",
        "need",
        "needs",
        "now",
        "only",
        "other",
        "out",
        "own",
        "same",
        "so",
        "too",
        "very",
        "yes",
        "our",
        "ours",
        "you",
        "yours",
        "accept",
        "reject",
    ]
)
# Scripts whose letters mix in one language: Japanese writes kanji with kana.
_SCRIPT_FAMILY = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HALFWIDTH": "CJK"}


def words(text: str) -> list[str]:
    """The lower-case words of a text (letters and digits, any script)."""
    return _WORD.findall(text.lower())


def note_similarity(a: str, b: str) -> float:
    """Token Jaccard similarity of two notes: shared words over all their words (0 to 1)."""
    x, y = set(words(a)), set(words(b))
    return len(x & y) / len(x | y) if x | y else 1.0


def restates(a: str, b: str) -> bool:
    """Whether two notes restate each other: their token Jaccard similarity is at least
    `SIMILAR_NOTES` (0.6), e.g. "Budget: USD 45,000 a month" and "The budget is USD 45,000
    a month"."""
    return note_similarity(a, b) >= SIMILAR_NOTES


@lru_cache(maxsize=64)
def _grams(text: str, n: int) -> frozenset[tuple[str, ...]]:
    """The word n-grams of `text` (cached: the same prompt is checked note after note)."""
    said = words(text)
    return frozenset(tuple(said[i : i + n]) for i in range(len(said) - n + 1))


def copies_prompt(note: str, prompt: str | Iterable[str], output: str) -> bool:
    """Whether `note` copies standing text of the update prompt (`prompt`, e.g. the agent's
    role) rather than the agent's `output`: of its word
    `PROMPT_NGRAM`-grams (all its words, when it has fewer), at least `COPIED_SHARE` (0.5)
    are in `prompt` and fewer than that in `output`.

    12-07, a default meeting on a 0.5B model: the Knowledge Integration Agent kept "No new
    proposals of your own; your digest is what the others build on." from its role."""
    said = words(note)
    n = min(PROMPT_NGRAM, len(said))
    if not n:
        return False
    grams = [tuple(said[i : i + n]) for i in range(len(said) - n + 1)]
    texts = [prompt] if isinstance(prompt, str) else list(prompt)

    def share(sources: list[str]) -> float:
        found = [_grams(text, n) for text in sources]
        return sum(any(g in f for f in found) for g in grams) / len(grams)

    return share(texts) >= COPIED_SHARE and share([output]) < COPIED_SHARE


def _says_more(new: str, old: str) -> bool:
    """Whether `new` holds a figure `old` lacks, or more distinct words."""
    new_words, old_words = set(words(new)), set(words(old))
    figures = {w for w in new_words - old_words if any(c.isdigit() for c in w)}
    return bool(figures) or len(new_words) > len(old_words)


def reconcile(kept: list[list[str]], fresh: set[str]) -> int:
    """Resolve restated notes in place: each note in `fresh` (new in this version) that
    restates another note, older or fresh and wherever it stands in the memory, either
    replaces it (when it says more) or is dropped. Returns how many notes were merged away.
    Older notes are never compared with each other, but a note held twice, word for word (an
    edit that adds an older note again), is kept once."""
    merged = 0
    held: set[str] = set()
    for section in kept:
        for note in list(section):
            if note in held:
                section.remove(note)
                merged += 1
            held.add(note)
    seen = [(i, note) for i, section in enumerate(kept) for note in section if note not in fresh]
    for index, section in enumerate(kept):
        for note in [n for n in section if n in fresh]:
            twin = next((s for s in seen if restates(note, s[1])), None)
            if twin is None:
                seen.append((index, note))
                continue
            merged += 1
            if _says_more(note, twin[1]):
                kept[twin[0]].remove(twin[1])
                seen.remove(twin)
                seen.append((index, note))
            else:
                section.remove(note)
    return merged


def _script(char: str) -> str | None:
    """The script of a letter (the first word of its Unicode name); None for non-letters."""
    if not unicodedata.category(char).startswith("L"):
        return None
    name = unicodedata.name(char, "").split(" ", 1)[0]
    return _SCRIPT_FAMILY.get(name, name) or None


def scripts_of(text: str) -> frozenset[str]:
    """The scripts a source writes in: its most used one, and Latin (Unicode script names
    as in character names: "LATIN", "CJK", "CYRILLIC"...)."""
    counts = Counter(s for s in map(_script, text) if s)
    main = counts.most_common(1)[0][0] if counts else "LATIN"
    return frozenset({main, "LATIN"})


def strip_foreign(note: str, scripts: Iterable[str]) -> tuple[str, bool]:
    """`note` without letters of other scripts, and whether it changed; "" when it lost
    more than half its words or kept fewer than `MIN_WORDS` (refused)."""
    allowed = set(scripts)
    tokens = _WORD.findall(note)
    foreign = [t for t in tokens if any((_script(c) or "LATIN") not in allowed for c in t)]
    if not foreign:
        return note, False
    kept = "".join(c for c in note if _script(c) in allowed or not _script(c))
    kept = " ".join(kept.split()).rstrip(_TRAILING).strip()
    if 2 * len(foreign) > len(tokens) or len(_WORD.findall(kept)) < MIN_WORDS:
        return "", True
    return kept, True


def strip_repeats(note: str) -> tuple[str, bool]:
    """`note` cut where it starts repeating itself, and whether it was cut; "" when fewer
    than `MIN_WORDS` words remain (refused)."""
    spans = list(_WORD.finditer(note.lower()))
    tokens = [m.group() for m in spans]
    cut = _first_repeat(tokens)
    if cut is None:
        return note, False
    if cut < MIN_WORDS:
        return "", True
    return note[: spans[cut].start()].rstrip(_TRAILING).strip(), True


def _first_repeat(tokens: list[str]) -> int | None:
    """The word index where the text starts saying again what it said."""
    seen: dict[tuple[str, ...], int] = {}
    for i in range(len(tokens)):
        for size in range(1, 7):  # a phrase said again right after itself
            if i >= size and tokens[i - size : i] == tokens[i : i + size]:
                return i
        gram = tuple(tokens[i : i + REPEAT_WORDS])
        if len(gram) == REPEAT_WORDS:
            if gram in seen and seen[gram] + REPEAT_WORDS <= i:
                return i
            seen.setdefault(gram, i)
    return None


def new_words(output: str, memory: str) -> set[str]:
    """The words of `output` a memory lacks: figures, and words of three letters or more
    outside `STOP_WORDS`."""
    held = set(words(memory))
    return {
        w
        for w in words(output)
        if w not in held and (any(c.isdigit() for c in w) or (len(w) >= 3 and w not in STOP_WORDS))
    }
