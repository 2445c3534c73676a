"""``kvrace import``: IMITATOR models translated into specs, and their regions.

The models are from IMITATOR's benchmark library (tests/data/imitator/README.md).
Their regions are compared (with Z3) against regions derived by hand from the models
(Fischer's protocol is safe iff the wait ``Delta`` is at least the write window
``delta``; the rail gate is safe iff the gate is down before the train passes,
``dApproach > dStartDown + dGetDown``; the coffee is reachable iff the cup comes
before the coffee's deadline, ``p2 <= p3``) and against the regions IMITATOR 3.1
published for them (``tests/data/imitator/published.json``), among them the bounded
retransmission protocol, the root contention protocol and Thales' FMTV end-to-end
latency (whose initial constraint bounds clocks instead of zeroing them, and whose
result is projected onto the latency).
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
    ("& x = 0", "& x = 0 & x <= 3", "8:1: error: the initial constraint sets clock `x` to 0"
                                    " and also bounds it"),
    ("& y = 0", "", "8:1: error: the initial constraint must set clock `y` to 0 or bound it"),
    ("& y = 0", "& y - x <= 1", "8:67: error: only comparisons of one clock"),
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


def test_projectresult_must_name_a_parameter(tmp_path: Path) -> None:
    model, prop = tmp_path / "m.imi", tmp_path / "m.imiprop"
    model.write_text(MINI)
    prop.write_text("property := #synth EF(loc[a] = l1);\nprojectresult(p, n);\n")
    code, _, err = run_cli("import", str(model), "--property", str(prop))
    assert (code, err) == (2, f"{prop}:2:18: error: `n` is not a parameter (projectresult"
                              " projects the result onto parameters)\n")
    prop.write_text("property := #synth EF(loc[a] = l1);\nprojectresult(p);\n")
    code, out, err = run_cli("import", str(model), "--property", str(prop))
    assert (code, err) == (0, "")
    assert "# IMITATOR projects the result onto p (projectresult): kvrace synth --project p\n" \
        in out


@pytest.mark.parametrize(("update", "ok"), [
    ("n := m, m := 0", True),    # reads m before it is written: the same in any order
    ("m := 0, n := m", False),   # reads m after it is written: the order would matter
])
def test_update_order(tmp_path: Path, update: str, ok: bool) -> None:
    model = tmp_path / "m.imi"
    model.write_text(MINI.replace("n : discrete", "n, m : discrete")
                     .replace("n := n + 1", update).replace("n := 0;", "n := 0, m := 0;"))
    code, out, err = run_cli("import", str(model))
    if ok:
        assert (code, err) == (0, ""), err
        assert "do n := m; m := 0; loc_a := l1" in out
    else:
        assert code == 2 and "reads a variable an earlier update of the same transition" \
            " writes" in err, err


BOUNDED = """var x, y : clock; p : parameter;
automaton a
actions: ;
loc l0: invariant True
  when x >= 5 & y <= p goto l1;
loc l1: invariant True
end
init := { discrete = loc[a] := l0; continuous = & 0 <= x & x <= 3 & y = 0
  & p >= 0 & p <= 10; }
end
"""
"""x starts anywhere in [0, 3], y at 0: l1 needs x >= 5 and y <= p, and y = x - x0 >= 2
when it fires, so it is reachable iff p >= 2 (iff p >= 5 if x started at 0)."""


def test_bounded_initial_clocks_start_anywhere_inside(tmp_path: Path) -> None:
    model, prop = tmp_path / "b.imi", tmp_path / "b.imiprop"
    model.write_text(BOUNDED)
    prop.write_text("property := #synth EF(loc[a] = l1);\n")
    spec = tmp_path / "b.kvr"
    code, _, err = run_cli("import", str(model), "--property", str(prop), "-o", str(spec))
    assert (code, err) == (0, "")
    text = spec.read_text()
    assert ("event initial.set_x\n  when initial_phase == choosing and not initial_set_x\n"
            "  do initial_set_x := true; reset x\n") in text
    assert ("event initial.start\n  when initial_phase == choosing and initial_set_x and"
            " x <= 3\n  do initial_phase := running; reset y\n") in text
    assert "when initial_phase == running and loc_a == l0" in text
    assert "reachable ef: initial_phase == running and (loc_a == l1)" in text
    code, out, _ = run_cli("synth", str(spec), "--query", "ef", "--json")
    doc = json.loads(out)
    assert (code, doc["reachable_region"]) == (0, "p >= 2"), out


# ---- the regions IMITATOR published ----------------------------------------------------------

PUBLISHED = json.loads((DATA / "published.json").read_text(encoding="utf-8"))
IMPORT_OPTIONS = {"FMTV_1_A1": ["--int-range", "0..200", "--param-max", "200"]}
"""What a model needs besides the defaults: FMTV's frames are numbered up to 200 and its
end-to-end latency exceeds 100."""
SLOW_MODELS = {"FischerPS08-4", "BRPDKRT97", "RCP_CS01", "FMTV_1_A1"}


def _imitator_z3(text: str, names: list[str]) -> z3.BoolRef:
    from test_regions import parse_region

    return parse_region(text.replace(" & ", " and "), names)


@pytest.mark.parametrize("model", [
    pytest.param(m, marks=pytest.mark.slow) if m in SLOW_MODELS else m
    for m in PUBLISHED["models"]])
def test_region_is_imitators(tmp_path: Path, model: str) -> None:
    # The region (projected, when IMITATOR projects it) equals the one IMITATOR's
    # result file states, within kvrace's ranges (IMITATOR's parameters are unbounded).
    pub = PUBLISHED["models"][model]
    out = tmp_path / f"{model}.kvr"
    code, _, err = run_cli("import", str(DATA / f"{model}.imi"), "--property",
                           str(DATA / f"{pub['property']}.imiprop"), "-o", str(out),
                           *IMPORT_OPTIONS.get(model, []))
    assert (code, err) == (0, "")
    target = ["--query", "ef"] if pub["property"].endswith("-EF") else ["--property", "agnot"]
    project = ["--project", ",".join(pub["project"])] if "project" in pub else []
    code, text, _ = run_cli("synth", str(out), *target, *project, "--json")
    doc = json.loads(text)
    assert code == 0 and doc["complete"], text
    ours = z3.And(*z3.parse_smt2_string(str(doc["smtlib"])))
    names = pub.get("project") or doc["free"]
    # the ranges (and assume constraints) the SMT-LIB script is read within
    decls = "".join(f"(declare-const {p} Real)\n" for p in names)
    within = z3.And(*z3.parse_smt2_string(decls + "(assert true)\n"))
    theirs = _imitator_z3(pub["region"], names)
    box = _ranges_z3(out, names)
    assert _same(z3.And(within, box, ours), z3.And(within, box, theirs)), (doc["smtlib"],
                                                                           pub["region"])


def _ranges_z3(spec: Path, names: list[str]) -> z3.BoolRef:
    """The declared ranges and `assume` constraints over ``names`` (the others dropped:
    a projection's box)."""
    from checker.api import load_spec
    from checker.model.compiled import SpecModel
    from checker.smt import synth as sy

    sp = load_spec(spec)
    model = SpecModel(sp, concrete=False)
    free = [p.name for p in sp.params if p.name in names]
    ranges = sy.range_constraints(model, free)
    return sy.region_z3([], [c for c in ranges
                             if all(v.removeprefix("p:") in names for v, _ in c.coefs)])
