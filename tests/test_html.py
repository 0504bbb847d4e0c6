"""Offline HTML reports (``icltheory report --html``): self-contained pages with MathML, written
complete-or-absent and byte-identical on rerun, and opened in a real headless Chromium
(skipped when none is installed; CI installs Debian's ``chromium``)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from _chromium import Chromium, find

from icltheory._cli import main
from icltheory.report import html_page, verify
from icltheory.report._html import fragment, tex_to_mathml

#: a small report set: a derivation with formulas, a vector check and figures; a second paper
CLAIMS = ["linattn.merged.sigmoid", "catgd.cross-attention"]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith("timing.")}


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "reports"
    code = main(["report", *CLAIMS, "--profile", "quick", "--html", "--out", str(out),
                 "-j", "1", "--quiet"])
    assert code == 0
    return out


# ------------------------------------------------------------------ the pages, without a browser


@pytest.mark.slow
def test_report_html_writes_a_page_per_claim_and_an_index(report_dir):
    names = {p.name for p in report_dir.iterdir()}
    assert {f"{c}.html" for c in CLAIMS} | {"index.html", "index.md"} <= names
    for c in CLAIMS:
        side = json.loads((report_dir / f"{c}.json").read_text())
        assert f"{c}.html" in side["report"]["files"]  # the page is part of the claim's set
    assert verify(report_dir) == []
    index = (report_dir / "index.html").read_text()
    for c in CLAIMS:
        assert f'href="{c}.html"' in index
    assert "not run" in index  # the other registered claims, as in index.md


def _figures(report_dir: Path, claim: str) -> int:
    return len(json.loads((report_dir / f"{claim}.json").read_text())["figures"])


@pytest.mark.slow
def test_pages_are_self_contained(report_dir):
    assert sum(_figures(report_dir, c) for c in CLAIMS) >= 2
    for c in CLAIMS:
        text = (report_dir / f"{c}.html").read_text()
        assert text.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in text
        assert "<script" not in text and "<link" not in text
        assert not re.search(r'(src|href)="(https?:|//)', text)
        srcs = re.findall(r'<img src="([^"]*)"', text)
        assert len(srcs) == _figures(report_dir, c)
        assert all(s.startswith("data:image/png;base64,") for s in srcs)
        assert text.count("<math") >= 5
        assert 'class="tex-unconverted"' not in text  # every formula of these reports converts
        assert "✅" not in text and "mark ok" in text  # no emoji font needed


@pytest.mark.slow
def test_rerun_is_byte_identical_and_a_markdown_run_removes_stale_pages(report_dir, tmp_path):
    again = tmp_path / "again"
    assert main(["report", *CLAIMS, "--profile", "quick", "--html", "--out", str(again),
                 "-j", "2", "--quiet"]) == 0
    assert _files(again) == _files(report_dir)  # parallel == serial, run after run
    # a later run without --html: that claim's page would be stale, so it goes; the index
    # page stays current and links the claim's Markdown instead
    assert main(["report", CLAIMS[0], "--profile", "quick", "--out", str(again), "-j", "1",
                 "--quiet"]) == 0
    assert not (again / f"{CLAIMS[0]}.html").exists() and (again / f"{CLAIMS[1]}.html").exists()
    index = (again / "index.html").read_text()
    assert f'href="{CLAIMS[0]}.md"' in index and f'href="{CLAIMS[1]}.html"' in index
    assert verify(again) == []


def test_markdown_to_html_pieces():
    assert tex_to_mathml(r"\frac{a}{b}").startswith('<math alttext="\\frac{a}{b}"')
    assert 'display="inline"' in tex_to_mathml("x^2", display=False)
    assert "tex-unconverted" in tex_to_mathml(r"\frac{1}{")  # shown as source, not dropped
    assert "<mo>arg</mo><msub><mo>min</mo>" in tex_to_mathml(r"\arg\min_S L")
    body = fragment("Inline $x^2$ and a price of 5$ or $5.\n\n```math\n\\sqrt{D}\n```\n\n"
                    "| a | b |\n|---|---|\n| 1 | 2 |\n\n```json\n{\"k\": 1}\n```\n")
    assert body.count("<math") == 2 and "<table>" in body and "price of 5$ or $5." in body
    assert '<code class="language-json">' in body
    # raw HTML in a claim's text is shown as text, never run
    assert "&lt;script&gt;" in fragment("<script>alert(1)</script>")
    page = html_page("![f](figures/a.png) [b](b.md)", title="t <x>",
                     images={"figures/a.png": b"\x89PNG"}, links={"b.md": "b.html"})
    assert 'src="data:image/png;base64,iVBORw==' in page and 'href="b.html"' in page
    assert "<title>t &lt;x&gt;</title>" in page
    assert page == html_page("![f](figures/a.png) [b](b.md)", title="t <x>",
                             images={"figures/a.png": b"\x89PNG"}, links={"b.md": "b.html"})


# ------------------------------------------------------------------ in a real browser

CHROMIUM = find()
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="no chromium on this machine (CI installs it)")

#: what the test reads from each loaded page (the pages themselves have no script)
PROBE = r"""(() => {
  const maths = Array.from(document.querySelectorAll('math'));
  return {
    title: document.title,
    maths: maths.length,
    laid_out_as_math: maths.filter(m => getComputedStyle(m).display.includes('math')
                                        && m.getBoundingClientRect().width > 0).length,
    fractions: document.querySelectorAll('mfrac').length,
    images: document.images.length,
    images_decoded: Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0)
                         .length,
    text: document.body.innerText.length,
    // prose (code, preformatted blocks and formulas taken out): Markdown that did not render
    // (a literal ** of a broken emphasis) and JSON dumped into the text
    stray_emphasis: prose().filter(t => t.includes('**')).length,
    raw_json: prose().filter(t => /^\s*[{\[]\s*"/.test(t)).length,
  };
  function prose() {
    return Array.from(document.querySelectorAll('p, li, td, th, h1, h2, h3, h4')).map(e => {
      const c = e.cloneNode(true);
      c.querySelectorAll('code, pre, math').forEach(x => x.remove());
      return c.textContent;
    });
  }
})()"""


def _not_blank(png: bytes) -> tuple[bool, str]:
    """Whether a screenshot shows something: enough non-background pixels and contrast."""
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(io.BytesIO(png), format="png")[..., :3]
    gray = img.mean(axis=2)
    inked = float(np.mean(gray < 0.9))
    return inked > 0.01 and float(gray.std()) > 0.05, f"inked {inked:.3f}, std {gray.std():.3f}"


@pytest.fixture(scope="module")
def browser():
    with Chromium(CHROMIUM) as b:  # type: ignore[arg-type]
        yield b


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("page", [*CLAIMS, "index"])
def test_page_in_chromium(page, report_dir, browser):
    url = (report_dir / f"{page}.html").resolve().as_uri()
    visit = browser.visit(url, PROBE)
    assert visit.errors == [], visit.errors
    assert [m for m in visit.console if m["level"] == "warning"] == []
    # nothing but the page itself and its embedded images was loaded
    assert all(u == url or u.startswith("data:") for u in visit.requests), visit.requests
    f = visit.facts
    assert f["stray_emphasis"] == 0 and f["raw_json"] == 0, f
    if page == "index":
        assert f["title"] == "icltheory reports" and f["text"] > 200
    else:
        assert f["title"].startswith(page)
        assert f["maths"] >= 5 and f["laid_out_as_math"] == f["maths"], f
        assert f["fractions"] > 0  # real MathML layout elements, not text
        assert f["images"] == _figures(report_dir, page) == f["images_decoded"], f
    ok, why = _not_blank(visit.screenshot)
    assert ok, why


@pytest.mark.slow
@needs_chromium
def test_browser_checks_can_fail(tmp_path, browser):
    """The browser test would notice a page that loads something (blocked by the policy and
    reported in the console), a blank screenshot, a broken emphasis and JSON in the prose."""
    bad = tmp_path / "bad.html"
    bad.write_text(html_page("![missing](figures/missing.png)", title="bad"), encoding="utf-8")
    visit = browser.visit(bad.resolve().as_uri(), PROBE)
    assert visit.errors and visit.facts["images_decoded"] == 0
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><title>b</title><p>a **broken emphasis</p>"
                      "<p>{\"checks\": [1, 2]}</p><pre>**code is fine**</pre>", encoding="utf-8")
    facts = browser.visit(broken.resolve().as_uri(), PROBE).facts
    assert (facts["stray_emphasis"], facts["raw_json"]) == (1, 1), facts
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><title>blank</title>", encoding="utf-8")
    assert not _not_blank(browser.visit(blank.resolve().as_uri()).screenshot)[0]


# ------------------------------------------------------------------ complete or absent


def _verdict(value: float):
    from icltheory.core import CheckContext, Plot, Series, Verdict

    ctx = CheckContext(predicted={"c": 1.0}, profile="quick", seed=0)
    ctx.close("c", key="c", measured=value, atol=1.0, why="t")
    plot = Plot("p", "x", "y", series=[Series([0, 1], [0, value])])
    return Verdict(claim="testonly.page", verdict="holds", setting={"v": value},
                   predicted={"c": 1.0}, measured={"c": value}, checks=ctx.checks,
                   evidence={}, seed=0, runtime_s=0.0, versions={}, plots=[plot],
                   claim_info={"title": "page", "statement": r"\frac{a}{b}"})


class _Killed(BaseException):
    """Stands for SIGKILL at the chosen file operation (and every later one)."""


def test_html_sets_are_complete_or_absent_when_a_commit_is_killed(tmp_path, monkeypatch):
    """An HTML run followed by a Markdown-only run (whose commit removes the now stale page),
    killed at every file operation: after recovery the folder holds the old set with its page
    or the new set without one, and nothing that no sidecar lists."""
    import os

    from icltheory.report import _store, commit, recover, render_claim

    old, new = [render_claim(_verdict(0.5), html=True)], [render_claim(_verdict(0.75))]
    real = {"write": _store._write_file, "replace": os.replace, "unlink": Path.unlink}
    state: dict = {"left": None, "count": 0}

    def step(name):
        def op(*a, **k):
            state["count"] += 1
            if state["left"] is not None:
                if state["left"] <= 0:
                    raise _Killed(name)
                state["left"] -= 1
            return real[name](*a, **k)
        return op

    def run(out: Path, left: int | None) -> bool:
        commit(old, out, html=True)
        monkeypatch.setattr(_store, "_write_file", step("write"))
        monkeypatch.setattr(os, "replace", step("replace"))
        monkeypatch.setattr(Path, "unlink", step("unlink"))
        state.update(left=left, count=0)
        try:
            commit(new, out)
            return True
        except _Killed:
            return False
        finally:
            monkeypatch.undo()

    assert run(tmp_path / "probe", None)
    total = state["count"]
    assert total >= 8
    for k in range(total + 1):
        out = tmp_path / f"k{k}"
        finished = run(out, k)
        recover(out)
        assert verify(out) == [], k
        page = out / "testonly.page.html"
        side = json.loads((out / "testonly.page.json").read_text())
        assert page.exists() == (side["setting"]["v"] == 0.5), k  # no stale page
        assert (out / "index.html").exists()  # the folder's index page stays
        if finished:
            assert not page.exists()
