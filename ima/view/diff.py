"""Line diffs between consecutive versions of an agent's memory (difflib)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

LineKind = Literal["same", "added", "removed"]


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str


@dataclass(frozen=True)
class MemoryDiff:
    lines: list[DiffLine]

    @property
    def added(self) -> int:
        return sum(line.kind == "added" for line in self.lines)

    @property
    def removed(self) -> int:
        return sum(line.kind == "removed" for line in self.lines)


def line_diff(old: str, new: str) -> MemoryDiff:
    """Every line of both versions in order: unchanged, removed (old) or added (new)."""
    a, b = old.splitlines(), new.splitlines()
    lines: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            lines += [DiffLine("same", text) for text in a[a1:a2]]
            continue
        lines += [DiffLine("removed", text) for text in a[a1:a2]]
        lines += [DiffLine("added", text) for text in b[b1:b2]]
    return MemoryDiff(lines)
