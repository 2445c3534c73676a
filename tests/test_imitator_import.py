"""``kvrace import``: IMITATOR models translated into specs, and their regions.

The models are from IMITATOR's benchmark library (tests/data/imitator/README.md).
The library publishes no result files for them, so the regions are compared (with
Z3) against regions derived by hand from the models: Fischer's protocol is safe iff
the wait ``Delta`` is at least the write window ``delta``; the rail gate is safe iff
the gate is down before the train passes, ``dApproach > dStartDown + dGetDown``; the
coffee is reachable iff the cup comes before the coffee's deadline, ``p2 <= p3``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import z3
from helpers import ROOT, run_cli

DATA = ROOT / "tests/data/imitator"


def _import(tmp_path: Path, model: str, prop: str) -> str:
    out = tmp_path / f"{model}.kvr"
    code, _, err = run_cli("import", str(DATA / f"{model}.imi"), "--property",
                           str(DATA / f"{prop}.imiprop"), "-o", str(out))
    assert (code, err) == (0, "")
    code, lint_out, _ = run_cli("lint", str(out))
    assert code == 0, lint_out
    return str(out)


def _region(spec: str) -> z3.BoolRef:
    code, out, _ = run_cli("synth", spec, "--property", "agnot", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["coverage"] == "some"
    return z3.And(*z3.parse_smt2_string(str(doc["smtlib"])))


def _same(a: z3.BoolRef, b: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(a != b)
    return bool(s.check() == z3.unsat)


def _box(*names: str) -> tuple[list[z3.ArithRef], z3.BoolRef]:
    vs = [z3.Real(n) for n in names]
    return vs, z3.And(*[z3.And(v >= 0, v <= 100) for v in vs])


@pytest.mark.parametrize("model", ["FischerPS08-2", "FischerPS08-3",
                                   pytest.param("FischerPS08-4", marks=pytest.mark.slow)])
def test_fischer_region(tmp_path: Path, model: str) -> None:
    spec = _import(tmp_path, model, "FischerPS08-AGnot")
    (d, big_d), box = _box("delta", "Delta")
    assert _same(_region(spec), z3.And(box, big_d >= d))


def test_rail_gate_region(tmp_path: Path) -> None:
    spec = _import(tmp_path, "Train1PTA", "Train1PTA-AGnot")
    (a, s, g), box = _box("dApproach", "dStartDown", "dGetDown")
    assert _same(_region(spec), z3.And(box, a > s + g))


def test_coffee_ef_region(tmp_path: Path) -> None:
    spec = _import(tmp_path, "coffee", "coffee-EF")
    code, out, _ = run_cli("synth", spec, "--query", "ef", "--json")
    doc = json.loads(out)
    assert (code, doc["coverage"]) == (0, "some")
    (_, p2, p3), box = _box("p1", "p2", "p3")
    assert _same(z3.And(*z3.parse_smt2_string(str(doc["smtlib"]))), z3.And(box, p2 <= p3))


CLOCK_QUERY = """model cq
param p in [0, 10] = 5
actor m
var l : {a, b} = a
clock x, y
event m.go when l == a and x >= 2 do l := b; reset x
deadline stay: y <= 6 while l == b
reachable late: l == b and x >= p
"""


def test_query_with_clock_part(tmp_path: Path) -> None:
    # b is entered at y >= 2 with x reset and must be left... never: y <= 6 caps time
    # there, so x reaches at most 4: `late` is reachable iff p <= 4.
    spec = tmp_path / "cq.kvr"
    spec.write_text(CLOCK_QUERY)
    code, out, _ = run_cli("synth", str(spec), "--query", "late", "--json")
    doc = json.loads(out)
    assert code == 0
    (p,), box = _box("p")
    assert _same(z3.And(*z3.parse_smt2_string(str(doc["smtlib"]))),
                 z3.And(box, p <= 4, p <= 10))


def test_nary_sync_is_one_event_per_combination(tmp_path: Path) -> None:
    text = Path(_import(tmp_path, "FischerPS08-2", "FischerPS08-AGnot")).read_text()
    # SetX1 is declared by process1 and variable: 1 edge x 3 edges of `variable`
    assert text.count("event process1.SetX1") == 3
    assert ("event process1.SetX1\n  when loc_process1 == trying1 and x1 < delta and "
            "loc_variable == Val0\n  do loc_process1 := waiting1; reset x1; "
            "loc_variable := Val1\n") in text
    assert "invariant agnot: not (loc_observer == obs_BAD)" in text


def test_coffee_translation(tmp_path: Path) -> None:
    text = Path(_import(tmp_path, "coffee", "coffee-EF")).read_text()
    assert "deadline inv_machine_add_sugar: y <= p2\n  while loc_machine == add_sugar" in text
    assert "param p1 in [0, 100] = 0" in text
    assert "reachable ef: loc_machine == cdone" in text


MINI = """var x, y : clock; p, q : parameter; n : discrete;
automaton a
actions: go;
loc l0: invariant x <= p
  when x >= q sync go do {n := n + 1} goto l1;
urgent loc l1: invariant True
end
init := { discrete = loc[a] := l0, n := 0; continuous = & x = 0 & y = 0 & p >= 1
  & p <= 10 & q + 1 <= p; }
end
"""


def test_constraints_urgency_and_ranges(tmp_path: Path) -> None:
    model = tmp_path / "m.imi"
    model.write_text(MINI)
    code, out, err = run_cli("import", str(model))
    assert (code, err) == (0, "")
    assert "param p in [1, 10] = 1" in out and "param q in [0, 100] = 0" in out
    assert "assume p >= q + 1" in out
    assert "deadline urgent_locations: urgent_clock <= 0\n  while loc_a == l1" in out
    assert "do n := (n + 1); loc_a := l1; reset urgent_clock" in out
    spec = tmp_path / "m.kvr"
    spec.write_text(out)
    assert run_cli("lint", str(spec))[0] == 0


@pytest.mark.parametrize(("edit", "where", "message"), [
    ("when x >= q sync", "when x - y >= q sync", "5:8: error: only comparisons of one clock"),
    ("x <= p\n", "x >= p\n", "4:19: error: an invariant may only bound clocks from above"),
    ("n := n + 1", "n := m + 1", "5:32: error: `m` is not declared"),
    ("goto l1", "goto l9", "5:44: error: `a` has no location `l9`"),
    ("n : discrete", "n : rational_list", "1:41: error: variables of type `rational_list`"),
    ("invariant True\nend", "invariant True stop{x}\nend", "6:31: error: stopwatches"),
    ("goto l1;", "goto l1", "6:1: error: unexpected `urgent`"),
    ("n := n + 1", "x := 3", "5:32: error: a clock can only be reset to 0"),
    ("& x = 0", "& x = 1", "8:59: error: clocks must start at 0"),
    ("& x = 0", "& x >= 0", "8:59: error: clocks must start at 0"),
    ("& y = 0", "", "8:1: error: the initial constraint must set clock `y` to 0"),
    ("n : discrete", "n = 3, k = 2 : discrete", "8:36: error: `n` is not a discrete variable"),
])
def test_refusals_are_positioned(tmp_path: Path, edit: str, where: str, message: str) -> None:
    model = tmp_path / "bad.imi"
    assert edit in MINI
    model.write_text(MINI.replace(edit, where, 1))
    code, out, err = run_cli("import", str(model))
    assert code == 2 and out == ""
    assert err.startswith(f"{model}:{message}"), err
    assert "Traceback" not in err


def test_property_refusals_name_the_property_file(tmp_path: Path) -> None:
    model, prop = tmp_path / "m.imi", tmp_path / "m.imiprop"
    model.write_text(MINI)
    prop.write_text("property := #synth AGnot(loc[a] = l7);\n")
    code, _, err = run_cli("import", str(model), "--property", str(prop))
    assert (code, err) == (2, f"{prop}:1:35: error: `a` has no location `l7`\n")
    prop.write_text("property := #synth AG(loc[a] = l1);\n")
    code, _, err = run_cli("import", str(model), "--property", str(prop))
    assert code == 2 and err.startswith(f"{prop}:1:20: error: unexpected"), err
