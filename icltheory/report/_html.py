"""Offline HTML: the Markdown reports as self-contained pages with MathML formulas.

The Markdown a report already is (see :mod:`._markdown`) is parsed with markdown-it-py
(CommonMark with tables; ```` ```math ```` fences and ``$…$``/``$$…$$`` as math through
mdit-py-plugins' ``dollarmath``), every formula is converted to MathML with latex2mathml,
figures are embedded as ``data:`` URIs, and links between reports point to their pages.  A
page loads nothing: no script, no font, no style sheet from elsewhere — its
Content-Security-Policy forbids it — so it reads the same offline in any browser with MathML
(Chromium ≥ 109, Firefox, Safari).  Rendering is deterministic: the same Markdown and figures
give the same bytes.
"""

from __future__ import annotations

import base64
import functools
import html
import re
from typing import Any, Mapping

__all__ = ["page", "fragment", "tex_to_mathml", "INDEX_HTML"]

INDEX_HTML = "index.html"

#: the page may load nothing but its own inline style and embedded images
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       color: #1f2328; background: #fff; margin: 0; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
nav { max-width: 60rem; margin: 0 auto; padding: 0.75rem 1.5rem 0; font-size: 0.9em; }
a { color: #0969da; }
h1 { font-size: 1.6em; border-bottom: 1px solid #d1d9e0; padding-bottom: 0.3em; }
h2 { font-size: 1.3em; border-bottom: 1px solid #d1d9e0; padding-bottom: 0.2em;
     margin-top: 1.8em; }
h3 { font-size: 1.1em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: 0.8em 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #d1d9e0; padding: 0.3em 0.6em; vertical-align: top;
         text-align: left; }
th { background: #f6f8fa; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em;
       background: #f6f8fa; padding: 0.1em 0.3em; border-radius: 4px; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; border-radius: 6px; }
pre code { background: none; padding: 0; }
.math.block { overflow-x: auto; overflow-y: hidden; margin: 0.6em 0; padding: 0.2em 0; }
math { font-family: "STIX Two Math", "Latin Modern Math", "Cambria Math", math; }
math[display="block"] { font-size: 1.1em; }
img { max-width: 100%; height: auto; }
li { margin: 0.2em 0; }
.tex-unconverted { color: #9a6700; }
.mark { font-weight: bold; }
.mark.ok { color: #1a7f37; } .mark.bad { color: #cf222e; } .mark.undecided { color: #9a6700; }
"""

#: the Markdown's emoji marks as text symbols that common fonts have (a page needs no emoji font)
_MARKS = {"✅": '<span class="mark ok">✓</span>', "❌": '<span class="mark bad">✗</span>',
          "❔": '<span class="mark undecided">?</span>'}


_ARG = re.compile(r"\\arg(?![A-Za-z])")


@functools.lru_cache(maxsize=4096)
def tex_to_mathml(tex: str, display: bool = True) -> str:
    """MathML for the LaTeX ``tex`` (``display``: a block, else inline).  LaTeX that
    latex2mathml cannot convert is shown as its source, marked ``tex-unconverted``."""
    from latex2mathml.converter import convert

    tex = tex.strip()
    try:
        # the one standard operator name latex2mathml does not know
        mathml = convert(_ARG.sub(r"\\operatorname{arg}", tex),
                         display="block" if display else "inline")
    except Exception:  # latex2mathml raises many kinds of errors on LaTeX it does not know
        tag = "pre" if display else "code"
        return f'<{tag} class="tex-unconverted" title="LaTeX">{html.escape(tex)}</{tag}>'
    # the LaTeX source as alternative text (screen readers; copied formulas)
    return mathml.replace("<math ", f'<math alttext="{html.escape(tex, quote=True)}" ', 1)


def _render_math(content: str, opts: dict[str, Any]) -> str:
    return tex_to_mathml(content, bool(opts.get("display_mode")))


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")
    dollarmath_plugin(md, allow_labels=False, allow_space=False, allow_digits=False,
                      double_inline=True, renderer=_render_math)

    def fence(self: RendererHTML, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tok = tokens[idx]
        if tok.info.strip() == "math":
            return f'<div class="math block">{tex_to_mathml(tok.content, True)}</div>\n'
        return RendererHTML.fence(self, tokens, idx, options, env)

    md.add_render_rule("fence", fence)
    return md


def _walk(tokens: Any) -> Any:
    for tok in tokens:
        yield tok
        if tok.children:
            yield from _walk(tok.children)


def _data_uri(name: str, blob: bytes) -> str:
    kind = "image/png" if name.endswith(".png") else "application/octet-stream"
    return f"data:{kind};base64,{base64.b64encode(blob).decode('ascii')}"


def fragment(markdown: str, *, images: Mapping[str, bytes] | None = None,
             links: Mapping[str, str] | None = None) -> str:
    """The HTML body for ``markdown``: math as MathML, each image whose source is a key of
    ``images`` embedded as a data URI, each link whose target is a key of ``links`` pointed
    to its value."""
    md = _parser()
    tokens = md.parse(markdown)
    for tok in _walk(tokens):
        if tok.type == "image" and images:
            src = str(tok.attrGet("src") or "")
            if src in images:
                tok.attrSet("src", _data_uri(src, images[src]))
        elif tok.type == "link_open" and links:
            href = str(tok.attrGet("href") or "")
            if href in links:
                tok.attrSet("href", links[href])
    body = str(md.renderer.render(tokens, md.options, {}))
    for mark, text in _MARKS.items():
        body = body.replace(mark, text)
    return body


def page(markdown: str, *, title: str, images: Mapping[str, bytes] | None = None,
         links: Mapping[str, str] | None = None, home: str | None = INDEX_HTML) -> str:
    """A complete, self-contained HTML page for ``markdown`` (see :func:`fragment`);
    ``home``: the page the navigation links back to (``None``: no navigation)."""
    nav = f'<nav><a href="{html.escape(home, quote=True)}">← all reports</a></nav>\n' \
        if home else ""
    return ("<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            '<meta name="generator" content="icltheory">\n'
            f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            f"{nav}<main>\n{fragment(markdown, images=images, links=links)}</main>\n"
            "</body>\n</html>\n")
