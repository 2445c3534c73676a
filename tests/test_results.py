"""The typed results (verdicts, property references, limit kinds), the exception
root, and the layering of the command line over the presentation package."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from checker import errors
from checker.api import Limits, check, state_graph
from checker.cli import main
from checker.language import load_text
from checker.limits import LimitHit, LimitKind
from checker.model.compiled import SpecModel
from checker.present import jsonout
from checker.results import PropertyKind, PropertyRef, Verdict

ROOT = Path(__file__).resolve().parent.parent

INSTANCE_INVARIANT = """model inv_instance
type Id = {a, b}
actor p
var done : Id -> bool = false
event p.go(i: Id)
  when not done[i]
  do done[i] := true
invariant stays_off(i: Id): not done[i]
"""

INSTANCE_RESPONSE = """model resp_instance
param T in [0, 10] = 2
type Id = {a}
actor p
var asked : Id -> bool = false
var got : Id -> bool = false
clock since : Id
event p.ask(i: Id)
  when not asked[i]
  do asked[i] := true; reset since[i]
event p.answer(i: Id)
  when asked[i] and not got[i] and since[i] >= 5
  do got[i] := true
property answered(i: Id): asked[i] and not got[i] leadsto got[i] within T
"""

STUCK = """model stuck
actor p
var x : bool = false
clock c
event p.go()
  when x
  do x := false
deadline c <= 1 while not x
"""


def test_property_ref_of_label() -> None:
    ref = PropertyRef.of_label(PropertyKind.RESPONSE, "bounded_release[A]")
    assert (ref.kind, ref.name, ref.instance) == (PropertyKind.RESPONSE, "bounded_release", "[A]")
    assert ref.label == "bounded_release[A]"
    plain = PropertyRef.of_label(PropertyKind.INVARIANT, "mutex")
    assert (plain.name, plain.instance, plain.label) == ("mutex", "", "mutex")


def test_verdicts_are_the_json_words() -> None:
    assert json.dumps([Verdict.HOLDS, PropertyKind.DEADLOCK]) == '["holds", "deadlock"]'
    assert f"{Verdict.INCONCLUSIVE}" == "inconclusive"
    assert {Verdict.VIOLATED: 1}["violated"] == 1


@pytest.mark.parametrize(("text", "kind", "name", "shown"), [
    (INSTANCE_INVARIANT, PropertyKind.INVARIANT, "stays_off", "invariant stays_off[a]"),
    (INSTANCE_RESPONSE, PropertyKind.RESPONSE, "answered", "property answered[a]"),
])
def test_the_explorer_types_the_violated_property(text: str, kind: PropertyKind, name: str,
                                                  shown: str, tmp_path: Path) -> None:
    out = check(load_text(text, "x.kvr"))
    assert out.verdict is Verdict.VIOLATED
    assert out.ref == PropertyRef(kind, name, "[a]")
    out.assert_violated(name)
    path = tmp_path / "x.kvr"
    path.write_text(text)
    stdout = io.StringIO()
    assert main(["check", str(path), "--json", "-q"], stdout, io.StringIO()) == 1
    doc = json.loads(stdout.getvalue())
    assert (doc["property"], doc["property_kind"]) == (shown, kind.value)


def test_assert_and_deadlock_refs() -> None:
    out = check(ROOT / "spec/sglang/deferred_release.kvr", T_hold=7)
    assert out.ref == PropertyRef(PropertyKind.ASSERT)
    fields = jsonout.property_fields(out.ref, out.trace)
    assert fields["property_kind"] == "assert"
    assert str(fields["property"]).startswith("assert in decode.land(")
    dead = check(load_text(STUCK, "stuck.kvr"))
    assert dead.ref == PropertyRef(PropertyKind.DEADLOCK)
    assert jsonout.property_fields(dead.ref, dead.trace)["property"] == "deadlock freedom"
    assert check(ROOT / "spec/sglang/deferred_release.kvr").ref is None


def test_a_limit_says_which_limit() -> None:
    out = check(load_text(INSTANCE_INVARIANT, "x.kvr"), limits=Limits(max_states=1))
    assert out.verdict is Verdict.INCONCLUSIVE and out.limit == "state limit (1) reached"
    assert out.raw is not None and out.raw[1].limit_kind is LimitKind.STATES
    assert LimitHit("time limit (2 s) reached").kind is LimitKind.TIME
    assert LimitHit("memory limit (9 MiB) reached").kind is LimitKind.MEMORY
    assert LimitHit("").kind is None
    assert LimitHit("", LimitKind.STATES).kind is LimitKind.STATES
    # The state limit of `graph` means "too large to draw", not "inconclusive".
    model = SpecModel(load_text(INSTANCE_INVARIANT, "x.kvr"))
    assert state_graph(model, 1) is None


def test_one_exception_root() -> None:
    from checker.cli.signals import Interrupted
    from checker.diagnostics import SpecError
    from checker.engines.distributed import RayMissing
    from checker.export import ExportError
    from checker.limits import MemoryLimitHit
    from checker.model.compiled import ParamError
    from checker.model.interface import LimitReached, ModelRuntimeError, Undecided
    from checker.model.ir import TooManyBranches
    from checker.model.trace import TraceFormatError
    from checker.present.dot import RenderError
    from checker.simulate.distributions import DistributionError
    from checker.simulate.plot import PlotError
    from checker.smt.poly import OutOfTime
    from checker.view.server import BadRequest
    from checker.view.steps import RunError

    families = {
        errors.UsageError: [ParamError, TraceFormatError, DistributionError, RayMissing,
                            BadRequest],
        errors.ModelError: [ModelRuntimeError],
        errors.Inconclusive: [LimitHit, LimitReached, MemoryLimitHit, Undecided, OutOfTime],
        errors.KvraceError: [SpecError, TooManyBranches, RenderError, PlotError, ExportError,
                             RunError],
    }
    for family, members in families.items():
        assert issubclass(family, errors.KvraceError)
        for cls in members:
            assert issubclass(cls, family), cls
    assert issubclass(DistributionError, ValueError)
    assert not issubclass(Interrupted, Exception)  # no `except Exception` swallows it
    assert errors.Inconclusive("state limit (3) reached").reason == "state limit (3) reached"


def test_presentation_runs_no_engine() -> None:
    code = ("import sys, checker.present.text, checker.present.jsonout, checker.present.dot,"
            " checker.present.reports; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('z3', 'lark') "
            "or m.startswith(('checker.engines', 'checker.language', 'checker.smt',"
            " 'checker.api', 'checker.simulate', 'checker.model.compiled', 'checker.cli'))); "
            "print(','.join(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert proc.stdout.strip() == ""


def test_old_module_names_are_the_new_modules() -> None:
    import checker.jsonout
    import checker.render
    from checker.present import dot

    assert checker.jsonout is jsonout
    assert checker.render is dot
