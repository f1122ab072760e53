"""The items of a list in the final design, whatever shape the model wrote them in.

A model asked for a list of strings may put several items in one string ("1. a 2. b",
"a, 2. b", lines or bullets inside a string), number or bullet them itself (once, or twice:
"2. 2. b"), nest them ("1.1 a", "a) a", indented lines), or leave separators and empty items
behind (", b", "", "-"). `list_items` reads every one of these shapes into plain items: none
is empty, none starts with a list marker or punctuation (but for what opens text: a bracket,
a quote, Markdown emphasis such as "**Storage**"), so the design numbers or bullets them
once. A nested item is folded into the item above it ("a: x; y"): the list keeps the model's
top level.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["list_items"]

_BULLETS = (
    "-*+\u2022\u2023\u25e6\u25aa\u25cf\u2043\u2219\u00b7\u2013\u2014\u2192\u25b6\u25ba\u2713\u2714"
)
# A nested number without a closing "." or ")" ("1.1 Depot") stands before a word, not a
# unit ("2.5 Gbit/s" is a figure).
_WORD = r"(?=\s+(?![KMGTP]i?[Bb])[A-Z][a-z]{2,})"
_NESTED = rf"\d{{1,2}}(?:\.\d{{1,2}})+(?:[.)]|{_WORD})"
_TOP = r"\d{1,2}[.)]|[a-z]\)"
# One thing an item may start with that is not its text: a separator, a closing bracket, a
# marker (followed by a space, a separator or the end).
_LEAD = re.compile(
    rf"\s+|[,;:.!?)\]}}|/\\]+"
    rf"|(?P<marker>(?P<nested>{_NESTED})|{_TOP}|[{re.escape(_BULLETS)}])(?=[\s,;:]|$)"
)
# Where one line holds several items: a number (checked against the sequence), a nested
# number, or a bullet after a separator or a sentence's end.
_INLINE = re.compile(
    rf"(?:(?<=\s)|(?<=[,;:]))(?:(?P<nested>{_NESTED})|(?P<top>\d{{1,2}})[.)])(?=\s+\S)"
    rf"|(?:[,;]|(?<=[.!?]))\s*[{re.escape(_BULLETS)}](?=\s+\S)"
    r"|(?<=\s)[\u2022\u2023\u25e6\u25aa\u25cf](?=\s+\S)"
)


@dataclass
class _Item:
    text: str
    subs: list[str] = field(default_factory=list)

    def render(self) -> str:
        if not self.subs:
            return self.text
        return f"{self.text.rstrip(' .:;,')}: {'; '.join(self.subs)}"


_OPENERS = "\"'`\u00bf\u00a1"  # quotes and marks that open text


def _stray(piece: str) -> bool:
    """Whether a piece starts with punctuation that opens no text (not a bracket, a quote,
    or Markdown emphasis before a word: "**Storage**", "_raw_")."""
    first, after = piece[0], piece[1:2]
    kind = unicodedata.category(first)
    if not kind.startswith("P") or kind in ("Ps", "Pi") or first in _OPENERS:
        return False
    return not (first in "*_" and (after.isalnum() or after == first))


def _strip(piece: str) -> tuple[str, bool, bool]:
    """A piece without what it starts with besides its text (separators left at its end go
    too), whether it had a list marker, and whether the first was a nested one."""
    nested, marked = False, False
    while piece:
        match = _LEAD.match(piece)
        if match:
            if match.group("marker") and not marked:
                nested, marked = bool(match.group("nested")), True
            piece = piece[match.end() :]
        elif _stray(piece):
            piece = piece[1:]
        else:
            break
    return " ".join(piece.split()).rstrip(",; "), marked, nested


def _number(piece: str) -> int | None:
    """The number a piece opens with (", 2." or "2)"), if it is numbered at the top level."""
    match = re.match(r"[\s,;:]*(\d{1,2})[.)](?=\s|$)", piece)
    return int(match.group(1)) if match else None


def _split_line(line: str, count: int) -> Iterator[str]:
    """The pieces of one line: it splits before a bullet after a separator, before nested
    numbers that follow one another ("1.1 ... 1.2"), and before a number that continues the
    line's own numbering or the list's (`count`: top-level items so far)."""
    marks = list(_INLINE.finditer(line))
    tops = [(m, int(m.group("top"))) for m in marks if m.group("top")]
    nested = [m for m in marks if m.group("nested")]
    cuts = {m.start() for m in marks if not m.group("top") and not m.group("nested")}
    previous = _number(line)  # else the line's first item is the list's next one
    expected = count + 2 if previous is None else previous + 1
    following = {n for _, n in tops}
    for match, n in tops:
        if n == expected or (previous is None and n + 1 in following):
            cuts.add(match.start())
            previous, expected = n, n + 1
    minors = [int(m.group("nested").split(".")[1].rstrip(".)")) for m in nested]
    for i, match in enumerate(nested):  # a run of sub-items, not one decimal figure
        if (i and minors[i - 1] + 1 == minors[i]) or (
            i + 1 < len(nested) and minors[i] + 1 == minors[i + 1]
        ):
            cuts.add(match.start())
    start = 0
    for cut in sorted(cuts):
        yield line[start:cut]
        start = cut
    yield line[start:]


def _pieces(value: Any) -> Iterator[tuple[str, str]]:
    """Each line of a value the model wrote (a string, or a list or mapping it nested) and
    where it stands: "line", "indented" (a later line of a string, indented) or "sub" (in a
    list or mapping inside the list)."""
    if isinstance(value, list | tuple):
        for inner in value:
            yield from ((text, "sub") for text, _ in _pieces(inner))
    elif isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, list | tuple | dict):
                yield str(key), "line"
                yield from _pieces([inner])
            else:
                yield f"{key}: {inner}", "line"
    elif value is not None:
        for i, line in enumerate(str(value).splitlines()):
            indented = i > 0 and len(line) - len(line.lstrip(" \t")) >= 2
            yield line, "indented" if indented else "line"


def list_items(values: Iterable[Any]) -> list[str]:
    """The items `values` (the model's list) hold, cleaned as the module says."""
    items: list[_Item] = []
    for value in values:
        for line, where in _pieces(value):
            for piece in _split_line(line, len(items)):
                text, marked, nested = _strip(piece)
                if not text:
                    continue
                indented = where == "indented"
                if (nested or where == "sub" or (indented and marked)) and items:
                    items[-1].subs.append(text)
                elif indented and not marked and items:  # a continued line
                    target = items[-1]
                    if target.subs:
                        target.subs[-1] += f" {text}"
                    else:
                        target.text += f" {text}"
                else:
                    items.append(_Item(text))
    return [item.render() for item in items]
