"""The report's markdown as HTML for the job page: GitHub's dialect, never foreign HTML.

The report is built from issue text. Of the HTML in it only the bare tags the report
itself writes survive (`<details>`, `<summary>`, `<sub>`, no attributes, so nothing can
run or load); any other tag is shown as text. Links keep markdown-it's own check that
refuses `javascript:`, `vbscript:` and `data:` (except images). Mermaid blocks (GitHub
draws them; we cannot without a script) become a note pointing at the page's own charts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markupsafe import Markup

_md = MarkdownIt("commonmark", {"html": True, "linkify": False, "typographer": False})
_md.enable(["table", "strikethrough"])
_html = RendererHTML()
_KEPT_TAG = re.compile(r"</?(?:details|summary|sub)>")


def _allowlisted(html: str) -> str:
    """`html` with the allowlisted bare tags kept and everything else escaped."""
    out, at = [], 0
    for match in _KEPT_TAG.finditer(html):
        out += [escape(html[at:match.start()]), match.group(0)]
        at = match.end()
    out.append(escape(html[at:]))
    return "".join(out)


def _raw_html(self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any,
              env: Any) -> str:
    return _allowlisted(tokens[idx].content)


def _fence(self: RendererHTML, tokens: Sequence[Token], idx: int, options: Any,
           env: Any) -> str:
    if tokens[idx].info.strip().split(" ")[0] == "mermaid":
        return ('<p class="note">(A chart GitHub draws from this report; see the charts '
                "above.)</p>\n")
    return _html.fence(tokens, idx, options, env)


_md.add_render_rule("fence", _fence)
_md.add_render_rule("html_block", _raw_html)
_md.add_render_rule("html_inline", _raw_html)


def report_html(markdown: str) -> Markup:
    """Safe HTML for `markdown`, whatever the issue put in it."""
    # Safe: markdown-it escapes text, and raw HTML passes `_allowlisted` only.
    return Markup(_md.render(markdown))
