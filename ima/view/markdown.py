"""design.md as HTML: CommonMark plus tables, with raw HTML and images shown as text.

The documentation is model output, so it must not inject markup, and the page must not
fetch anything at view time (an image link would).
"""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markupsafe import Markup


def _alignment_as_class(state: StateCore) -> None:
    # A table column's alignment comes as a style attribute, which the page's
    # Content-Security-Policy blocks: a class of the page's style sheet says the same.
    for token in state.tokens:
        style = token.attrs.pop("style", None)
        if style:
            token.attrSet("class", "align-" + str(style).removeprefix("text-align:"))


@cache
def _parser() -> MarkdownIt:
    # html=False escapes raw HTML; markdown-it also refuses javascript:/data: link targets.
    parser = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")
    parser.core.ruler.push("alignment_as_class", _alignment_as_class)
    return parser


def render_markdown(text: str) -> Markup:
    return Markup(_parser().render(text or ""))
