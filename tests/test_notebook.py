"""Notebooks: verdicts and derivations render themselves, a plot becomes a matplotlib Figure, and
the example notebook (examples/notebook.ipynb) runs top to bottom in a real Jupyter kernel
(nbclient + ipykernel, from the ``notebook`` extra; skipped cleanly without them)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from icltheory.core import CheckContext, Derivation, Plot, Series, Verdict

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def test_plot_to_figure():
    from matplotlib.figure import Figure

    from icltheory.report import render_png

    plot = Plot("loss", "t", "L", series=[Series([1, 2, 3], [3.0, 1.0, 0.5], "trained"),
                                         Series([1, 2, 3], [2.9, 1.1, 0.5], "theory",
                                                style="dashed")],
                hlines=[(0.5, "L*")], vlines=[(2.0, "t_half")], logy=True)
    fig = plot.to_figure()
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_title() == "loss" and ax.get_xlabel() == "t" and ax.get_ylabel() == "L"
    assert ax.get_yscale() == "log" and ax.get_xscale() == "linear"
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert list(lines["trained"].get_ydata()) == [3.0, 1.0, 0.5]
    assert lines["theory"].get_linestyle() == "--"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["trained", "theory"]
    assert len(ax.get_lines()) == 4  # the two series and the two reference lines
    assert render_png(plot)[:4] == b"\x89PNG"


def test_verdict_and_derivation_render_as_html():
    import sympy as sp

    ctx = CheckContext(predicted={"c": 2.0}, profile="quick", seed=0)
    ctx.close("c measured", key="c", measured=2.0 + 1e-12, atol=1e-9, why="float64")
    ctx.close("c again", key="c", measured=2.5, atol=1e-9, why="float64")
    v = Verdict(claim="testonly.x", verdict="fails", setting={}, predicted={"c": 2.0},
                measured={}, checks=ctx.checks, evidence={}, seed=0, runtime_s=0.0,
                versions={}, reasons=["failed: c again"])
    html = v._repr_html_()
    assert html.startswith('<div class="icltheory-verdict">') and "<table>" in html
    assert "testonly.x" in html and "fails" in html and "mark bad" in html
    assert v._repr_markdown_().startswith("**`testonly.x`: ❌ fails**")
    x = sp.Symbol("x")
    d = Derivation("demo")
    d.step("power rule", sp.Derivative(x**3, x), 3 * x**2, "differentiate")
    html = d._repr_html_()
    assert "<math" in html and "power rule" in html and "exact" in html


@pytest.mark.slow
def test_example_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # the kernel is started as `python -m ipykernel_launcher`: make that this interpreter
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the cell if any cell fails

    def outputs(marker: str) -> list[dict]:
        cell = next(c for c in nb.cells if c.cell_type == "code" and marker in c.source)
        return cell.outputs

    def data(marker: str, mime: str) -> str:
        found = [o["data"][mime] for o in outputs(marker) if mime in o.get("data", {})]
        assert found, f"no {mime} output from the cell with {marker!r}"
        return found[0]

    def stdout(marker: str) -> str:
        return "".join(o.get("text", "") for o in outputs(marker) if o.get("name") == "stdout")

    assert "claims, for example:" in stdout("it.all_claims()")
    assert "source: arXiv" in stdout("claim.describe()")
    verdict_html = data("it.run_check(claim, setting)", "text/html")
    assert "icltheory-verdict" in verdict_html and "<table>" in verdict_html
    assert stdout("verdict.false_fail").startswith("holds |")  # at the user's setting
    assert data("to_figure()", "image/png")  # the Figure drawn inline
    assert "<math" in data("verdict.derivation", "text/html")
    assert "holds at 5 random settings" in stdout("itest.settings(")
