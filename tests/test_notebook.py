"""The flagship notebook (docs/flagship.ipynb) runs from top to bottom, and shows what
it says: a verdict with a diagram, a one-line repr, the trace, the viewer inline; from
any working folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import ROOT

NOTEBOOK = ROOT / "docs" / "flagship.ipynb"


@pytest.mark.slow  # starts a Jupyter kernel
def test_flagship_notebook_executes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # The kernel imports this checkout's checker, installed or not.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        assert cell.get("outputs", []) == [], "commit the notebook without outputs"
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}},
                            shutdown_kernel="immediate").execute()
    outputs = [c.outputs for c in nb.cells if c.cell_type == "code"]

    def data(cell: int, kind: str) -> str:
        got = [o["data"][kind] for o in outputs[cell] if "data" in o and kind in o["data"]]
        assert len(got) == 1, f"cell {cell}: {outputs[cell]}"
        return str(got[0])

    def text(cell: int) -> str:
        return "".join(o.get("text", "") for o in outputs[cell] if o["output_type"] == "stream")

    race = data(0, "text/html")
    assert "<b>VIOLATED</b>: assert: write of A chunk 0 lands in slot s0 owned by B" in race
    assert "<svg" in race or "<pre>" in race
    assert data(0, "text/plain").startswith("<Outcome immediate_release (T_prop=2, T_chunk=2,")
    assert text(1) == ("<Outcome immediate_release (T_prop=2, T_chunk=2, T_flight=3): violated:"
                       " assert: write of A chunk 0 lands in slot s0 owned by B; trace of 6"
                       " events>\n")
    assert data(2, "text/plain") == "<Trace immediate_release: violated assert, 6 events>"
    assert "decode   land(A, 0)  &lt;- step 2" in data(2, "text/html")
    assert text(3) == ("decode.land(A, 0) at t = 5\n{'owner[s0]': 'B', 'write[A, 0]': 'landed',"
                       " 'write[A, 1]': 'unsent'}\n")
    assert data(4, "text/html").startswith("<iframe srcdoc=")
    assert text(5) == ("T_hold=7: violated: assert: write of A chunk 0 lands in slot s0 owned"
                       " by B\nT_hold=7.5: holds\nT_hold=8: holds\n")
    assert "<b>VIOLATED</b>" in data(6, "text/html")
    assert "<b>SAFE REGION</b>: <code>T_hold &gt; 7</code>" in data(7, "text/html")


def test_notebook_paths_do_not_depend_on_the_working_folder() -> None:
    text = NOTEBOOK.read_text(encoding="utf-8")
    assert "../spec" not in text
    assert 'check(SPECS / \\"immediate_release.kvr\\")' in text
