"""``synth --plot``: the region over two parameters, drawn deterministically; the
polygons it draws are exact (their vertices and which edges are strict)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from helpers import run_cli
from test_synth_targets import TWO

from checker.smt.lin import Lin
from checker.smt.regions import Polygon, polygons

F = Fraction


def test_polygons_are_exact() -> None:
    # x + y < 10 and x >= 2 inside [0, 10]^2: a triangle; its hypotenuse is strict.
    piece = [Lin.make({"p:X": F(1), "p:Y": F(1)}, F(-10), True),
             Lin.make({"p:X": F(-1)}, F(2), False)]
    got = polygons([piece], "X", "Y", (F(0), F(10), F(0), F(10)))
    assert got == [Polygon(((F(2), F(0)), (F(10), F(0)), (F(2), F(8))), (None, True, False))]
    # A piece outside the box, and a flat one, are left out.
    assert polygons([[Lin.make({"p:X": F(-1)}, F(11), False)]], "X", "Y",
                    (F(0), F(10), F(0), F(10))) == []
    flat = [Lin.make({"p:X": F(1)}, F(-3), False), Lin.make({"p:X": F(-1)}, F(3), False)]
    assert polygons([flat], "X", "Y", (F(0), F(10), F(0), F(10))) == []


@pytest.mark.slow
def test_plot_is_deterministic(tmp_path: Path) -> None:
    spec = tmp_path / "two.kvr"
    spec.write_text(TWO)
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    code, _, err = run_cli("synth", str(spec), "--plot", str(first))
    assert code == 0 and f"wrote {first}" in err, err
    run_cli("synth", str(spec), "--plot", str(second))
    data = first.read_bytes()
    assert data.startswith(b"<?xml") and b"<svg" in data
    assert data == second.read_bytes()
    assert b"<dc:date>" not in data
    code, _, err = run_cli("synth", str(spec), "--query", "at_s2", "--plot",
                           str(tmp_path / "q.png"))
    assert code == 0 and (tmp_path / "q.png").read_bytes().startswith(b"\x89PNG"), err


def test_plot_usage_errors(tmp_path: Path) -> None:
    spec = tmp_path / "two.kvr"
    spec.write_text(TWO)
    code, _, err = run_cli("synth", str(spec), "--free", "T", "--plot", str(tmp_path / "a.svg"))
    assert code == 2 and "exactly two free parameters" in err, err
    code, _, err = run_cli("synth", str(spec), "--plot", str(tmp_path / "a.gif"))
    assert code == 2 and "use .svg, .png or .pdf" in err, err
    # A plot that cannot be written is a warning; the verdict stands.
    code, out, err = run_cli("synth", str(spec), "--plot", str(tmp_path / "no" / "a.svg"))
    assert code == 0 and "SAFE REGION: T > 3" in out and "warning" in err, err
