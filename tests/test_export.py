"""``kvrace export``: UPPAAL's XML and TChecker's format.

* The TChecker output is read back by a small parser of TChecker's declaration
  grammar (below), which checks every declaration's syntax and that every name is
  declared before use; the automaton it describes is then explored by kvrace's own
  explorer, which must give the same verdict as ``kvrace check --no-deadlock`` on
  the spec (so the export keeps the timed semantics, not only the syntax).
* The UPPAAL output must be well-formed XML following the flat-system DTD's
  element structure, with every reference resolved and every label parseable.
* Where ``tck-reach`` is on PATH, TChecker itself must agree on every spec.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from test_reference import TableModel

from checker import api
from checker.engines import Options, explore
from checker.export import ExportError, tchecker_text, unfold, uppaal_xml
from checker.export.network import tchecker_network
from checker.language import load, load_text
from checker.model.compiled import SpecModel

SPECS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "spec").rglob("*.kvr"))
SMALL = ["spec/sglang/early_reject.kvr", "spec/sglang/radix_prefix_poison.kvr",
         "spec/sglang/abort_ack_before_drain.kvr", "spec/sglang/heartbeat_loss.kvr",
         "spec/classic/fischer.kvr", "spec/sglang/immediate_release.kvr"]

# ---- TChecker's declaration grammar --------------------------------------------------

ID = r"[A-Za-z_][A-Za-z0-9_.]*"
ATOM = rf"{ID}(?:\[[0-9]+\])?(?:<=|<|>=|>|==)-?[0-9]+"
CONJ = re.compile(rf"{ATOM}(?:&&{ATOM})*")
DO = re.compile(rf"{ID}(?:\[[0-9]+\])?=0(?:;{ID}(?:\[[0-9]+\])?=0)*")
DECL = re.compile(
    r"(?P<kind>system|clock|int|process|event|location|edge|sync):(?P<rest>[^{]*)"
    r"(?:\{(?P<attrs>[^}]*)\})?$")


@dataclass
class Tck:
    """What the parser read: enough to explore the automaton."""

    clocks: dict[str, int] = field(default_factory=dict)
    events: set[str] = field(default_factory=set)
    locations: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, str, dict[str, str]]] = field(default_factory=list)
    system: str = ""
    processes: set[str] = field(default_factory=set)


def _attrs(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if not text:
        return out
    for part in text.split(" : "):
        key, sep, value = part.partition(":")
        assert sep and re.fullmatch(r"[a-z]+", key.strip()), part
        assert key.strip() not in out, f"attribute {key} twice"
        out[key.strip()] = value.strip()
    return out


def _check_atoms(text: str, tck: Tck) -> None:
    assert CONJ.fullmatch(text), text
    for m in re.finditer(rf"({ID})(?:\[([0-9]+)\])?", text):
        name, idx = m.group(1), m.group(2)
        assert name in tck.clocks, f"undeclared clock {name}"
        assert idx is None or int(idx) < tck.clocks[name], text


def parse_tck(text: str) -> Tck:
    """Parse TChecker's system declarations; AssertionError on anything malformed."""
    tck = Tck()
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = DECL.fullmatch(line)
        assert m, f"line {n}: {line!r}"
        kind, fields, attrs = m.group("kind"), m.group("rest").split(":"), _attrs(m.group("attrs"))
        assert all(re.fullmatch(ID, f) or re.fullmatch(r"-?[0-9]+", f) for f in fields), line
        if kind == "system":
            assert not tck.system and len(fields) == 1
            tck.system = fields[0]
        elif kind == "clock":
            size, name = fields
            assert int(size) >= 1 and name not in tck.clocks
            tck.clocks[name] = int(size)
        elif kind == "process":
            tck.processes.add(fields[0])
        elif kind == "event":
            tck.events.add(fields[0])
        elif kind == "location":
            proc, name = fields
            assert proc in tck.processes and name not in tck.locations, line
            assert set(attrs) <= {"initial", "invariant", "labels"}, line
            if "invariant" in attrs:
                _check_atoms(attrs["invariant"], tck)
            tck.locations[name] = attrs
        elif kind == "edge":
            proc, src, dst, ev = fields
            assert proc in tck.processes and ev in tck.events, line
            assert src in tck.locations and dst in tck.locations, line
            assert set(attrs) <= {"provided", "do"}, line
            if "provided" in attrs:
                _check_atoms(attrs["provided"], tck)
            if "do" in attrs:
                assert DO.fullmatch(attrs["do"]), line
            tck.edges.append((src, dst, ev, attrs))
        else:
            raise AssertionError(f"line {n}: unexpected {kind}")
    assert tck.system
    assert sum(1 for a in tck.locations.values() if "initial" in a) == 1
    return tck


def _atoms(text: str | None) -> list[tuple[int, str, int]]:
    if not text:
        return []
    out = []
    for part in text.split("&&"):
        m = re.fullmatch(r"c\[([0-9]+)\](<=|<|>=|>)(-?[0-9]+)", part)
        assert m, part
        out.append((int(m.group(1)), m.group(2), int(m.group(3))))
    return out


def as_model(tck: Tck) -> TableModel:
    """The parsed automaton as a model kvrace's explorer can run (location ``k`` is
    state ``(k,)``, the initial one first; a location labelled ``bad`` violates)."""
    names = sorted(tck.locations, key=lambda n: "initial" not in tck.locations[n])
    index = {n: i for i, n in enumerate(names)}
    edges: dict[int, list[tuple[str, list[tuple[int, str, int]], list[int], int]]] = {}
    for src, dst, ev, attrs in tck.edges:
        resets = [int(x) for x in re.findall(r"c\[([0-9]+)\]=0", attrs.get("do", ""))]
        edges.setdefault(index[src], []).append(
            (f"{ev}@{src}", _atoms(attrs.get("provided")), resets, index[dst]))
    deadlines = {index[n]: _atoms(a.get("invariant")) for n, a in tck.locations.items()}
    violations = {index[n]: ["bad"] for n, a in tck.locations.items()
                  if "bad" in a.get("labels", "").split(",")}
    return TableModel([f"c{i}" for i in range(tck.clocks.get("c", 0))], edges, deadlines,
                      violations)


def exported(path: str) -> tuple[str, str]:
    model = SpecModel(load(ROOT / path))
    auto = unfold(model)
    return tchecker_text(auto), uppaal_xml(auto)


@pytest.mark.parametrize("path", SMALL)
def test_tchecker_output_keeps_the_verdict(path: str) -> None:
    text, _ = exported(path)
    back = explore(as_model(parse_tck(text)), options=Options(deadlock=False))
    want = api.check(ROOT / path, options=Options(deadlock=False)).verdict
    assert back.verdict == want
    if want == api.VIOLATED:
        assert back.prop == "bad"


# ---- UPPAAL's flat-system structure ---------------------------------------------------

NTA_ORDER = ["imports", "declaration", "template", "instantiation", "system", "queries"]
TEMPLATE_ORDER = ["name", "parameter", "declaration", "location", "branchpoint", "init",
                  "transition"]
LABEL_KINDS = {"invariant", "guard", "synchronisation", "assignment", "select", "comments",
               "exponentialrate", "probability", "testcodeEnter", "testcodeExit"}
UPP_ATOM = r"c\[[0-9]+\] (?:<=|<|>=|>) -?[0-9]+"
UPP_CONJ = re.compile(rf"{UPP_ATOM}(?: && {UPP_ATOM})*")
UPP_RESETS = re.compile(r"c\[[0-9]+\] = 0(?:, c\[[0-9]+\] = 0)*")


def _in_order(children: list[ET.Element], order: list[str]) -> None:
    ranks = [order.index(c.tag) for c in children]  # ValueError: an element the DTD lacks
    assert ranks == sorted(ranks), [c.tag for c in children]


def check_uppaal(xml: str) -> ET.Element:
    """Well-formed, the DTD's element order, references resolved, labels parseable."""
    assert xml.startswith('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE nta PUBLIC')
    root = ET.fromstring(xml.encode("utf-8"))
    assert root.tag == "nta"
    _in_order(list(root), NTA_ORDER)
    assert [c.tag for c in root].count("system") == 1
    decl = root.findtext("declaration") or ""
    assert re.search(r"^clock c\[[0-9]+\];$", decl, re.M)
    for tpl in root.iter("template"):
        _in_order(list(tpl), TEMPLATE_ORDER)
        ids = set()
        for loc in tpl.iter("location"):
            _in_order(list(loc), ["name", "label", "urgent", "committed"])
            assert loc.get("id") not in ids
            ids.add(loc.get("id"))
            assert re.fullmatch(r"-?[0-9]+", loc.get("x", "")) and loc.get("y") is not None
            for lab in loc.iter("label"):
                assert lab.get("kind") in {"invariant", "comments"}
                if lab.get("kind") == "invariant":
                    assert UPP_CONJ.fullmatch(lab.text or ""), lab.text
        init = tpl.find("init")
        assert init is not None and init.get("ref") in ids
        for tr in tpl.iter("transition"):
            _in_order(list(tr), ["source", "target", "label", "nail"])
            assert tr.find("source").get("ref") in ids  # type: ignore[union-attr]
            assert tr.find("target").get("ref") in ids  # type: ignore[union-attr]
            for lab in tr.iter("label"):
                assert lab.get("kind") in LABEL_KINDS
                if lab.get("kind") == "guard":
                    assert UPP_CONJ.fullmatch(lab.text or ""), lab.text
                if lab.get("kind") == "assignment":
                    assert UPP_RESETS.fullmatch(lab.text or ""), lab.text
    assert (root.findtext("system") or "").strip() == "system Model;"
    assert root.findtext("queries/query/formula") == "E<> Model.violation"
    return root


@pytest.mark.parametrize("path", SMALL)
def test_uppaal_output_follows_the_flat_dtd(path: str) -> None:
    text, xml = exported(path)
    root = check_uppaal(xml)
    tck = parse_tck(text)
    tpl = root.find("template")
    assert tpl is not None
    assert len(tpl.findall("location")) == len(tck.locations)
    assert len(tpl.findall("transition")) == len(tck.edges)


def test_immediate_release_figures() -> None:
    text, _ = exported("spec/sglang/immediate_release.kvr")
    assert text.count("\nlocation:") == 929 and text.count("\nedge:") == 3430
    assert "system:immediate_release\n" in text and "clock:8:c\n" in text
    assert "# c4 is since_post[A, 0]\n" in text
    assert text == exported("spec/sglang/immediate_release.kvr")[0]  # deterministic


def test_cli_writes_both(tmp_path: Path) -> None:
    code, out, err = run_cli("export", str(ROOT / "spec/sglang/early_reject.kvr"),
                             "--uppaal", str(tmp_path / "m.xml"),
                             "--tchecker", str(tmp_path / "m.tck"), "--flat")
    assert code == 0, err
    assert out.count("(29 locations, 36 transitions)") == 2
    check_uppaal((tmp_path / "m.xml").read_text(encoding="utf-8"))
    parse_tck((tmp_path / "m.tck").read_text(encoding="utf-8"))


def test_cli_errors(tmp_path: Path) -> None:
    spec = str(ROOT / "spec/sglang/early_reject.kvr")
    code, _, err = run_cli("export", spec)
    assert code == 2 and "--uppaal FILE.xml and/or --tchecker FILE.tck" in err
    code, _, err = run_cli("export", spec, "--tchecker", str(tmp_path / "m.tck"),
                           "--max-locations", "5", "--flat")
    assert code == 2 and "more than 5 discrete states" in err
    # A missing folder is created (as for every output); a file in the way is an error.
    code, _, err = run_cli("export", spec, "--tchecker", str(tmp_path / "new" / "m.tck"))
    assert code == 0 and (tmp_path / "new" / "m.tck").exists()
    (tmp_path / "file").write_text("")
    code, _, err = run_cli("export", spec, "--tchecker", str(tmp_path / "file" / "m.tck"))
    assert code == 2 and "cannot write" in err


def test_too_large() -> None:
    with pytest.raises(ExportError, match="more than 10 discrete states"):
        unfold(SpecModel(load(ROOT / "spec/sglang/immediate_release.kvr")), 10)


# ---- TChecker itself ------------------------------------------------------------------
#
# tck-reach (TChecker's reachability checker) is looked up on PATH, or named by the
# environment variable TCK_REACH; without it these tests skip.

TCK = os.environ.get("TCK_REACH") or shutil.which("tck-reach")
needs_tchecker = pytest.mark.skipif(TCK is None or not os.access(TCK, os.X_OK),
                                    reason="tck-reach is not installed (see README)")

FLAGSHIPS = ["spec/sglang/deferred_release.kvr", "spec/sglang/immediate_release.kvr",
             "spec/sglang/all_ranks_ack.kvr", "spec/sglang/paired_abort.kvr",
             "spec/classic/fischer.kvr", "spec/classic/fischer_processes.kvr",
             "spec/classic/csma_cd.kvr", "spec/classic/train_gate.kvr"]
STORED_AGREE = {
    "spec/sglang/deferred_release.kvr": 235, "spec/sglang/early_reject.kvr": 29,
    "spec/sglang/failed_send_no_ack.kvr": 176, "spec/sglang/mori_drain_ack.kvr": 265,
    "spec/sglang/mori_unbounded_wait.kvr": 11, "spec/sglang/retire_aborted_prefill.kvr": 46,
    "spec/vllm/turn2_expiry_check.kvr": 9, "spec/classic/fischer_processes.kvr": 65,
}
"""Specs whose zone graphs kvrace (without symmetry) and TChecker's covreach store
alike: the same number of symbolic states.  Elsewhere the counts differ by design:
kvrace drops the clocks a state no longer reads and bounds the others per discrete
state, TChecker per location of each process (a spec without processes has the one
location ``run``, so every clock keeps its largest constant throughout), and both
stop at the first violation, found in different orders."""
STORED_BOUNDS = {"spec/classic/fischer.kvr": (65, 134), "spec/classic/csma_cd.kvr": (26, 32),
                 "spec/classic/train_gate.kvr": (121, 178),
                 "spec/vllm/lease_renewal.kvr": (34, 79),
                 "spec/sglang/strict_never_freed.kvr": (325, 334)}
"""Specs that hold, where kvrace's zones and TChecker's stored states differ by the
clock bounds: fischer keeps its processes' control in data (fischer_processes, with
processes, stores 65 in both); csma_cd's clocks have smaller bounds in some discrete
states than in their process's location; train_gate's bounded response has a clock
of its own, which TChecker keeps throughout.  (The flat export, a location per
discrete state, gives TChecker kvrace's bounds: 65, 26 and 121 stored states.)"""


def tchecker(text: str, tmp_path: Path) -> dict[str, str]:
    """tck-reach's answer on ``text``: its ``KEY value`` lines."""
    assert TCK is not None
    f = tmp_path / "m.tck"
    f.write_text(text, encoding="utf-8")
    proc = subprocess.run([TCK, "-a", "covreach", "-l", "bad", str(f)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)


def network_of(path: str) -> str:
    model = SpecModel(load(ROOT / path))
    return tchecker_network(model.spec, model.values, queries=False).text


@pytest.mark.slow
@needs_tchecker
@pytest.mark.parametrize("path", sorted(set(FLAGSHIPS) | set(SPECS)))
def test_tchecker_agrees(path: str, tmp_path: Path) -> None:
    got = tchecker(network_of(path), tmp_path)
    want = api.check(ROOT / path, options=Options(deadlock=False, symmetry=False))
    assert got["REACHABLE"] == ("true" if want.verdict == api.VIOLATED else "false")
    if path in STORED_AGREE:
        assert want.raw is not None
        assert int(got["STORED_STATES"]) == want.raw[1].stats.zones == STORED_AGREE[path]
    if path in STORED_BOUNDS:
        assert want.raw is not None
        assert (want.raw[1].stats.zones, int(got["STORED_STATES"])) == STORED_BOUNDS[path]


@needs_tchecker
@pytest.mark.parametrize(("n", "zones", "transitions"), [
    (3, 765, 1_503), pytest.param(4, 12_000, 28_800, marks=pytest.mark.slow)])
def test_tchecker_stores_kvrace_zones_on_train_gate(n: int, zones: int, transitions: int,
                                                    tmp_path: Path) -> None:
    """TChecker's train-gate as a kvrace spec: explored by kvrace (no symmetry, no
    deadlock check) and, exported, by TChecker, the same zone graph, as TChecker
    stores for its own model (765 states at 3 trains, 12,000 at 4, 215,375 at 5).
    A process's locations kept as an int alone, with its location invariants as
    deadline processes, left TChecker's clock bounds global: 1,186 and 25,713
    states, 100 to 500 times the time, and no end in ten minutes at 5 trains."""
    spec = load_text(train_gate(n), "train_gate_tck.kvr")
    model = SpecModel(spec)
    want = api.check(spec, options=Options(deadlock=False, symmetry=False))
    assert want.raw is not None
    stats = want.raw[1].stats
    assert (stats.zones, stats.transitions) == (zones, transitions)
    got = tchecker(tchecker_network(model.spec, model.values, queries=False).text, tmp_path)
    assert got["REACHABLE"] == "false"
    assert (int(got["STORED_STATES"]), int(got["VISITED_TRANSITIONS"])) == (zones, transitions)


HANDSHAKE = """\
model hs

symmetric type N = {N1, N2}

chan req(N)
broadcast chan stop

process Srv {
  clock s
  var served : 0..3 = 0
  location idle
  location busy: s <= 3
  event take(n: N) from idle to busy receive req(n) when served < 3 do reset s; served := served + 1
  event finish from busy to idle send stop when s >= 1
}

process Cli(self: N) {
  clock x
  location think: x <= 6
  location wait
  event ask from think to wait send req(self) when x >= 2 do reset x
  event done from wait to think receive stop do reset x
}

invariant one: Srv.served <= 3
"""

RECEIVER_GUARD = """\
model bc

symmetric type N = {N1, N2}

broadcast chan ping

process Hub {
  clock h
  var rounds : 0..3 = 0
  location idle: h <= 5
  event tick from idle to idle send ping when h >= 2 and rounds < 3
    do reset h; rounds := rounds + 1
}

process Node(self: N) {
  clock x
  var heard : 0..3 = 0
  location wait
  location got: x <= 4
  event hear from wait to got receive ping when heard < 2 do reset x; heard := heard + 1
  event again from got to got receive ping do heard := heard + 1
  event back from got to wait when x >= 1
}

invariant bounded: forall n: N . Node.heard[n] <= 3
"""

CONDITIONAL_TARGET = """\
model cond

process P {
  clock x
  var k : 0..2 = 0
  location a: x <= 3
  location b, c
  event step from a when x >= 1 do k := k + 1; reset x; if k == 2 { loc := b }
  event go from b to c
  event back from c to a do reset x; k := 0
  event check from a, c when x >= 2 do assert k < 2 : "k reached {k}"
}
"""

LOCATED = {
    # a handshake and a broadcast between located processes: kvrace's zone graph
    "handshake": (HANDSHAKE, "P_Cli_N1", True, 13),
    # a receiver enabled by data as well as by its location keeps the int alone
    "receiver_guard": (RECEIVER_GUARD, "P_Node_N1", False, None),
    "receiver_guard_violated": (RECEIVER_GUARD.replace("heard[n] <= 3", "heard[n] <= 2"),
                                "P_Node_N1", False, None),
    # a location set conditionally, and an assert failing
    "conditional_target": (CONDITIONAL_TARGET, "P_P", False, None),
}
"""Small specs for the located processes of the network export: the spec, a process,
whether its locations are TChecker's, and TChecker's stored states where they must be
kvrace's zones."""


@pytest.mark.parametrize("case", sorted(LOCATED))
def test_which_processes_are_located(case: str) -> None:
    text, proc, located, _ = LOCATED[case]
    model = SpecModel(load_text(text, f"{case}.kvr"))
    net = tchecker_network(model.spec, model.values).text
    assert (f"location:{proc}:run{{initial:}}\n" not in net) == located, net


@needs_tchecker
@pytest.mark.parametrize("case", sorted(LOCATED))
def test_tchecker_agrees_on_located_processes(case: str, tmp_path: Path) -> None:
    text, _, _, stored = LOCATED[case]
    spec = load_text(text, f"{case}.kvr")
    model = SpecModel(spec)
    got = tchecker(tchecker_network(model.spec, model.values, queries=False).text, tmp_path)
    want = api.check(spec, options=Options(deadlock=False, symmetry=False))
    assert got["REACHABLE"] == ("true" if want.verdict == api.VIOLATED else "false")
    if stored is not None:
        assert want.raw is not None
        assert int(got["STORED_STATES"]) == want.raw[1].stats.zones == stored


@pytest.mark.slow
@needs_tchecker
@pytest.mark.parametrize("path", SMALL)
def test_tchecker_agrees_on_the_flat_form(path: str, tmp_path: Path) -> None:
    got = tchecker(exported(path)[0], tmp_path)
    want = api.check(ROOT / path, options=Options(deadlock=False)).verdict
    assert got["REACHABLE"] == ("true" if want == api.VIOLATED else "false")


# ---- the network, without TChecker -----------------------------------------------------


def test_the_network_keeps_the_processes_locations() -> None:
    model = SpecModel(load(ROOT / "spec/classic/train_gate.kvr"))
    net = tchecker_network(model.spec, model.values)
    procs = [line.split(":")[1] for line in net.text.splitlines()
             if line.startswith("process:")]
    assert procs[:4] == ["P_Train_T1", "P_Train_T2", "P_Train_T3", "P_Gate"]
    # A location invariant is the location's; a deadline on more than one process's
    # location (the urgent channel's) stays a process.
    assert procs[-1] == "verdict" and len(procs) == 8
    assert procs[4] == "D_urgent_Gate_release_Train_resume_T1"
    assert "location:P_Train_T1:safe{initial:}\n" in net.text
    assert "location:P_Train_T1:approaching{invariant:x_Train_x_T1<=20}\n" in net.text
    # The committed location is urgent (the guards keep other events out): no hidden clock.
    assert "location:P_Gate:notified{urgent:}\n" in net.text
    assert "x_urgent" not in net.text and "clock:1:x_Train_x_T1" in net.text
    # A handshake is an edge of each process, from the location the event leaves; the
    # edge of the process whose clock the guard compares carries guard and body, the
    # other resets its own clock.
    assert re.search(r"^sync:P_Train_T1@(e\d+):P_Gate@\1:.*:verdict@\1$", net.text, re.M)
    halt = re.search(r"^edge:P_Train_T1:approaching:stopped:(e\d+)\{provided:v_Gate_loc\[0\]==2"
                     r"&&.*x_Train_x_T1<=10 : do:.*\}$", net.text, re.M)
    assert halt and f"edge:P_Gate:notified:occupied:{halt[1]}\n" in net.text
    resume = re.search(r"^edge:P_Train_T1:stopped:starting:(e\d+)\{do:x_Train_x_T1=0\}$",
                       net.text, re.M)
    assert resume and re.search(rf"^edge:P_Gate:free:occupied:{resume[1]}\{{provided:", net.text,
                                re.M)
    assert net.text == tchecker_network(model.spec, model.values).text  # deterministic


def test_a_location_set_elsewhere_stays_an_int() -> None:
    """A process whose location another process's event sets keeps one location
    (its location is the int alone), so the export stays exact."""
    text = ("model m\nactor boss\nprocess W {\n  location idle, busy\n"
            "  event go from idle to busy\n}\n"
            "event boss.undo when W.loc == busy do W.loc := idle\n")
    model = SpecModel(load_text(text, "m.kvr"))
    net = tchecker_network(model.spec, model.values).text
    assert "location:P_W:run{initial:}\n" in net and "location:P_W:idle" not in net


def train_gate(n: int) -> str:
    """TChecker's own train-gate model with ``n`` trains, as kvrace's spec."""
    from benchmarks.bench import train_gate_tck_text

    return train_gate_tck_text(n)


def test_the_network_stays_small() -> None:
    text = network_of("spec/sglang/all_ranks_ack.kvr")
    # The flat form unfolds 15,444 locations; the network keeps the spec's size.
    assert sum(1 for line in text.splitlines() if line.startswith("location:")) < 100
    assert sum(1 for line in text.splitlines() if line.startswith("process:")) == 19


def test_queries_are_in_the_export() -> None:
    spec = load_text(QUERY_SPEC, "q.kvr")
    model = SpecModel(spec)
    text = tchecker_network(model.spec, model.values).text
    assert "location:Q_granted:yes{committed: : labels:granted}" in text
    assert "granted" not in tchecker_network(model.spec, model.values, queries=False).text


QUERY_SPEC = """\
model q
actor a
var x : 0..2 = 0
event a.step() when x < 2 do x := x + 1
reachable granted: x == 2
"""


def test_cli_writes_the_network(tmp_path: Path) -> None:
    out = tmp_path / "m.tck"
    code, text, err = run_cli("export", str(ROOT / "spec/sglang/all_ranks_ack.kvr"),
                              "--tchecker", str(out))
    assert code == 0, err
    assert text.startswith(f"wrote {out} (19 processes, ")
    assert "process:verdict" in out.read_text(encoding="utf-8")
    code, _, err = run_cli("export", str(ROOT / "spec/sglang/all_ranks_ack.kvr"),
                           "--tchecker", str(out), "--flat", "--max-locations", "100")
    assert code == 2 and "more than 100 discrete states" in err


@pytest.mark.slow
@needs_tchecker
def test_tchecker_answers_the_queries(tmp_path: Path) -> None:
    assert TCK is not None
    model = SpecModel(load_text(QUERY_SPEC.replace("x == 2", "x == 2\nreachable past: x > 2"),
                                "q.kvr"))
    f = tmp_path / "q.tck"
    f.write_text(tchecker_network(model.spec, model.values).text, encoding="utf-8")
    for label, want in (("granted", "true"), ("past", "false"), ("bad", "false")):
        proc = subprocess.run([TCK, "-a", "covreach", "-l", label, str(f)],
                              capture_output=True, text=True, timeout=60, check=False)
        assert f"REACHABLE {want}" in proc.stdout, (label, proc.stdout, proc.stderr)


def test_the_flat_form_carries_the_queries(tmp_path: Path) -> None:
    text = (QUERY_SPEC.replace("x == 2", "x == 2\nreachable past: x > 2")
            .replace("var x", "clock t\nvar x").replace("when x < 2 do x := x + 1",
                                                       "when x < 2 and t >= 1 do x := x + 1"))
    model = SpecModel(load_text(text, "q.kvr"))
    auto = unfold(model)
    assert auto.queries == (("granted", (2,)), ("past", ()))
    text = tchecker_text(auto)
    assert "location:P:s2{labels:granted}" in text
    root = check_uppaal(uppaal_xml(auto))
    assert [q.findtext("formula") for q in root.iter("query")] == [
        "E<> Model.violation", "E<> (Model.s2)", "E<> (false)"]


def test_a_query_on_clocks_is_refused_not_mistranslated(tmp_path: Path) -> None:
    spec = tmp_path / "cq.kvr"
    spec.write_text("model cq\nactor a\nclock c\nvar x : 0..1 = 0\n"
                    "event a.go when x == 0 do x := 1\n"
                    "reachable late: x == 1 and c > 3\n")
    for flat in ([], ["--flat"]):
        code, _, err = run_cli("export", str(spec), "--tchecker", str(tmp_path / "m.tck"), *flat)
        assert code == 2 and "reachable late" in err and "tests clocks" in err, err
        assert "--flat unfolds" not in err
