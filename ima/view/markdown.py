"""design.md as HTML: CommonMark plus tables, with raw HTML and images shown as text.

The documentation is model output, so it must not inject markup, and the page must not
fetch anything at view time (an image link would).
"""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt
from markupsafe import Markup


@cache
def _parser() -> MarkdownIt:
    # html=False escapes raw HTML; markdown-it also refuses javascript:/data: link targets.
    return MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")


def render_markdown(text: str) -> Markup:
    return Markup(_parser().render(text or ""))
