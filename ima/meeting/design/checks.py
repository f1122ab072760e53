"""Checks of the design's texts, without a model: what may not stand in a design, what is
copied rather than said, figures the brief contradicts, figures in a wrong unit, and
derivations that do not add up.

- Junk: a vote or flag (ACCEPT, REJECT, FINALIZE), the meeting's own instructions or prompt
  headings echoed back, schema residue (brackets, braces, JSON keys), an agent's id or
  role name standing for a component, a line spoken by an agent ("IA proposes..."), or a
  lead-in whose list never came (a line ending in ":").
- Copied: the share of a text's word 4-grams found verbatim in the brief or the task's
  requirements. A sentence copied from the brief, or nearly, does not say how a component
  works.
- Figures: a number with a unit ("30 days", "12 TB/day", "5 min"). A figure *conflicts* with
  a limit of the brief (a key figure with `limit`: a latency, a retention, the budget, an
  availability) when the clause stating it shares the limit's words ("raw", "deleted") and
  states the same kind of quantity, at a like scale, beyond the limit ("deleted after 60
  days" against at most 30 days). A design's own quantities ("20 MB clips, 1.8 GB a month")
  are not the brief's facts restated, so facts are not checked.
- Unit errors: a quantity labelled by its kind ("GPU-hours: ...", "storage: ...") given in a
  unit of another kind ("GPU-hours: 2 GB/h").
- Derivations: a product or sum written out ("12 TB/day x 30 days = 360 TB") is computed;
  an estimate whose value disagrees with its own derivation takes the derivation's result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ima.core.ngrams import ngram_set, ngrams, words
from ima.tasks import KeyFigure, Task

__all__ = [
    "COPY_NGRAM",
    "Figure",
    "copied_share",
    "figure_conflicts",
    "figures_in",
    "junk_reason",
    "unit_errors",
]

COPY_NGRAM = 4  # near-copies ("appear on the dashboard within 5 minutes") share 4-grams
SCALE = 10  # a figure this many times above or below a limit measures something else
_VOTE = re.compile(r"\b(ACCEPT|REJECT|FINALIZE)\b")
# A vote's reason, kept in a voter's memory: "The integrated proposal violates the ...".
_VERDICT = re.compile(
    r"\bproposal (?:is (?:not )?(?:acceptable|unacceptable)|violates|meets all|does not "
    r"(?:meet|violate))",
    re.I,
)
# ... and a field's name left as a text or a list's last item ("storing raw; cons", 12-07)
_RESIDUE = re.compile(
    r"[\[\]{}]|\"\s*:|\w+_\w+\s*[:\]]|\bplan\]|^\W+$"
    r"|(?:^|;\s*)(?:technology|why|pros|cons)\W*$",
    re.I,
)
_ECHOES = (
    "meeting notes so far",
    "question for you",
    "answer in at most",
    "your latest turn",
    "your memory",
    "should address next",
    "the meeting needs now",
    "start your answer",
)

# Units by kind, each with its factor to the kind's base (hours, gigabytes, GB per hour...).
_UNITS: dict[str, tuple[str, float]] = {
    "min": ("time", 1 / 60),
    "minute": ("time", 1 / 60),
    "minutes": ("time", 1 / 60),
    "s": ("time", 1 / 3600),
    "sec": ("time", 1 / 3600),
    "seconds": ("time", 1 / 3600),
    "h": ("time", 1.0),
    "hour": ("time", 1.0),
    "hours": ("time", 1.0),
    "day": ("time", 24.0),
    "days": ("time", 24.0),
    "week": ("time", 168.0),
    "weeks": ("time", 168.0),
    "month": ("time", 730.0),
    "months": ("time", 730.0),
    "year": ("time", 8760.0),
    "years": ("time", 8760.0),
    "mb": ("size", 0.001),
    "gb": ("size", 1.0),
    "tb": ("size", 1000.0),
    "pb": ("size", 1_000_000.0),
    "gbit/s": ("rate", 1.0),
    "gbps": ("rate", 1.0),
    "gb/s": ("rate", 1.0),
    "mbit/s": ("rate", 0.001),
    "mbps": ("rate", 0.001),
    "gb/h": ("throughput", 1.0),
    "tb/day": ("throughput", 1000 / 24),
    "gb/day": ("throughput", 1 / 24),
    "gpu-hours": ("gpu", 1.0),
    "gpu hours": ("gpu", 1.0),
    "usd": ("money", 1.0),
    "%": ("share", 1.0),
}
_NUMBER = r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_UNIT_ALT = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_FIGURE = re.compile(rf"{_NUMBER}\s*-?\s*({_UNIT_ALT})(?![a-z])", re.I)
_MONEY = re.compile(rf"(?:usd|\$)\s*{_NUMBER}", re.I)
# A label that names a kind of quantity, then its figure: "GPU-hours: 2 GB/h".
_LABELS = {
    "gpu": r"gpu[- ]hours?",
    "size": r"storage|disk|capacity",
    "money": r"cost|budget|spend|price",
    "rate": r"bandwidth|uplink|throughput",
}
_LABELLED = re.compile(
    rf"\b(?P<label>{'|'.join(_LABELS.values())})\b[^.;:\d]{{0,20}}[:=]\s*{_NUMBER}\s*-?\s*"
    rf"(?P<unit>{_UNIT_ALT})(?![a-z])",
    re.I,
)
_CUE_STOP = frozenset(
    [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "eight",
        "ten",
        "twelve",
        "the",
        "a",
        "an",
        "of",
        "per",
        "in",
        "at",
        "to",
        "for",
        "and",
        "or",
        "by",
        "each",
        "within",
        "after",
        "every",
        "about",
        "is",
        "are",
        "kept",
        "must",
        "be",
        "over",
        "with",
        "its",
        "their",
        "on",
        "from",
        "all",
    ]
)


@dataclass(frozen=True)
class Figure:
    """A number with a unit in a text, its kind and its amount in the kind's base unit."""

    text: str
    kind: str
    amount: float


def _figure(number: str, unit: str) -> Figure:
    kind, factor = _UNITS[unit.lower()]
    value = float(number.replace(",", ""))
    return Figure(f"{number} {unit}", kind, value * factor)


def figures_in(text: str) -> list[Figure]:
    """Every number with a unit in `text`, in order."""
    found = [_figure(m.group(1), m.group(2)) for m in _FIGURE.finditer(text)]
    found += [
        Figure(f"USD {m.group(1)}", "money", float(m.group(1).replace(",", "")))
        for m in _MONEY.finditer(text)
    ]
    return found


def junk_reason(text: str, task: Task, instructions: Iterable[str] = ()) -> str:
    """Why `text` may not stand in a design ("" when it may): a vote or flag, the meeting's
    instructions or prompt echoed, schema residue, or an agent's name as the whole text."""
    plain = " ".join(text.split())
    if not plain:
        return "it is empty"
    if _VOTE.search(plain):
        return f"it is a vote or flag ({_VOTE.search(plain).group(1)}), not part of a design"
    if _VERDICT.search(plain):
        return "it is a vote's verdict on the proposal, not part of a design"
    lowered = plain.lower()
    echo = next((e for e in _ECHOES if e in lowered), None)
    if echo:
        return f'it repeats the meeting\'s instructions ("{echo}")'
    if _RESIDUE.search(plain):
        return "it holds JSON or schema residue (brackets, braces or field names)"
    names = {r.id.lower() for r in task.roles} | {r.name.lower() for r in task.roles}
    if lowered.strip(" .") in names:
        return f'"{plain}" is an agent of the meeting, not a component'
    first = re.split(r"[\s:,]", lowered, maxsplit=1)[0]
    if first in {r.id.lower() for r in task.roles}:
        return "it is an agent speaking, not part of a design"
    if plain.endswith(":"):
        return "it ends where a list was to follow"
    grams = ngrams(plain, COPY_NGRAM)  # a short phrase ("12 GPU-hours per month") repeats none
    sources = ngram_set(instructions, COPY_NGRAM)
    if len(grams) >= 3 and sum(g in sources for g in grams) / len(grams) >= 0.5:
        return "it repeats the meeting's instructions"
    return ""


def copied_share(text: str, sources: Sequence[str], n: int = COPY_NGRAM) -> float:
    """Share of `text`'s word n-grams found verbatim in `sources` (0 for a shorter text)."""
    grams = ngrams(text, n)
    if not grams:
        return 0.0
    pool = ngram_set(sources, n)
    return sum(g in pool for g in grams) / len(grams)


def _reference(figure: KeyFigure) -> Figure | None:
    for spelling in figure.values:
        found = figures_in(spelling)
        if found:
            return found[0]
    return None


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _cues(figure: KeyFigure, reference: Figure) -> set[str]:
    """The words that tell which quantity a clause is about: the figure's text without its
    number, unit and small words ("raw", "data", "deleted" of "raw data deleted after 30
    days"), stemmed."""
    unit_words = set(words(reference.text))
    return {
        _stem(w)
        for w in words(figure.text)
        if w not in _CUE_STOP and w not in unit_words and not w.isdigit()
    }


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"(?<=[.;!?])\s+|\n+|,\s+(?=[a-z])", text) if c.strip()]


def _breaks(limit: str, stated: float, reference: float) -> bool:
    if limit == "at_most":
        return stated > reference * (1 + 1e-6)
    return stated < reference * (1 - 1e-6)


def figure_conflicts(task: Task, where: str, text: str) -> list[tuple[str, str, str]]:
    """(where, stated, brief) for each figure of `text` that breaks a limit of the brief:
    in a clause that shares the limit's words (two, or all of fewer), a figure of the same
    kind and scale (within `SCALE` times) beyond it ("deleted after 60 days" against at
    most 30 days; "kept 2 years" against at least 5 years). Facts of the brief are not
    checked: a design's own quantities share their words and units."""
    limits = [(f, r, _cues(f, r)) for f in task.key_figures if f.limit and (r := _reference(f))]
    found = []
    for clause in _clauses(text):
        clause_words = {_stem(w) for w in words(clause)}
        for stated in figures_in(clause):
            for figure, reference, cues in limits:
                if stated.kind != reference.kind or not cues or reference.amount <= 0:
                    continue
                if len(cues & clause_words) < min(2, len(cues)):
                    continue
                ratio = stated.amount / reference.amount
                if 1 / SCALE <= ratio <= SCALE and _breaks(
                    figure.limit, stated.amount, reference.amount
                ):  # type: ignore[arg-type]
                    found.append((where, stated.text, figure.text))
    return list(dict.fromkeys(found))


def unit_errors(text: str) -> list[str]:
    """Each "label: figure" of `text` whose figure is in a unit of another kind."""
    errors = []
    for match in _LABELLED.finditer(text):
        label = match.group("label").lower()
        expected = next(k for k, pattern in _LABELS.items() if re.fullmatch(pattern, label))
        kind = _UNITS[match.group("unit").lower()][0]
        if kind != expected:
            errors.append(match.group(0))
    return errors
