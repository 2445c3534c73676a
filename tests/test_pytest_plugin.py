"""The pytest plugin (``checker/testing/pytest_plugin.py``), tested with ``pytester``:
it collects nothing unless a project turns it on, then one item per ``# expect`` line
of each ``*.kvr`` spec; the items pass or fail as ``check`` and ``synth`` decide,
failures show the counterexample, malformed expectations are one clear line."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import pytest
import tomllib
from helpers import ROOT

from checker.testing import expect as ex

# The plugin is loaded by name, not through its entry point (which an installed kvrace
# registers as `kvrace`: blocked here, so that it is never loaded twice).
PLUGIN = ("-p", "no:kvrace", "-p", "checker.testing.pytest_plugin")
ON = "[pytest]\nkvrace_specs = true\n"

WINDOW = """\
# expect: holds
# expect fine: holds
# expect finished: reachable
# expect region: T <= 5
model window
param T in [0, 10] = 3
actor a
var done : bool = false
clock x
event a.go() when not done and x >= T do done := true
deadline x <= 5 while not done
invariant fine: true
reachable finished: done
"""


def _spec(name: str, header: str) -> str:
    """A spec of the repository with ``header`` (``# expect`` lines) in front."""
    return header + (ROOT / name).read_text(encoding="utf-8")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*PLUGIN, "-p", "no:cacheprovider", *args)


def test_nothing_is_collected_unless_turned_on(pytester: pytest.Pytester) -> None:
    pytester.makefile(".kvr", window=WINDOW)
    result = _run(pytester, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    pytester.makeini(ON)
    result = _run(pytester, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["window.kvr::check", "window.kvr::fine",
                                 "window.kvr::finished", "window.kvr::region"])


def test_the_command_line_flag_turns_it_on(pytester: pytest.Pytester) -> None:
    pytester.makefile(".kvr", window=WINDOW)
    _run(pytester, "--kvrace-specs").assert_outcomes(passed=4)


def test_specs_without_expectations_are_not_collected(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", plain=WINDOW.replace("# expect", "# we expect"))
    assert _run(pytester).ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_violation_fails_with_its_trace(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", immediate=_spec("spec/sglang/immediate_release.kvr",
                                              "# expect: holds\n"))
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*kvrace: check*",
        "immediate.kvr:1: expected holds, got violated",
        "VIOLATED: assert: write of A chunk 0 lands in slot s0 owned by B",
        "shortest trace, 6 events:",
        "*land(A, 0)  <- step 2",
        "*assertion violated: write of A chunk 0 lands in slot s0 owned by B"])
    assert "Traceback" not in result.stdout.str()


def test_expected_violations_and_undecided_properties(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", immediate=_spec(
        "spec/sglang/immediate_release.kvr",
        "# expect: violated\n# expect deadlock: holds\n"))
    result = _run(pytester, "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "immediate.kvr:2: expected deadlock freedom holds, got inconclusive: not decided:"
        " the exploration stopped at the first violation (assert)"])


def test_a_response_violation_with_params(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", gate=_spec(
        "spec/classic/train_gate.kvr",
        "# expect params: W=20\n# expect crosses_in_time: violated\n"
        "# expect one_on_bridge: holds\n"))
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "gate.kvr:3: expected invariant one_on_bridge holds, got inconclusive: not decided:"
        " the exploration stopped at the first violation (crosses_in_time[T2])"])


def test_queries(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", handoff=_spec(
        "tests/queries/handoff.kvr",
        "# expect: unreachable\n# expect both_flying: reachable\n"
        "# expect landed_unposted: reachable\n# expect posted_first: holds\n"))
    result = _run(pytester)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "handoff.kvr:3: expected reachable landed_unposted reachable, got unreachable: no"
        " reachable state satisfies exists r: Req . phase[r] == landed and not posted[r]"])


def test_a_lasso_is_shown(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", counter="""\
# expect done: holds
model counter
actor a
var n : 0..3 = 0
event a.inc() when n < 3 do n := n + 1
property done: n == 0 leadsto n == 3
""")
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "counter.kvr:1: expected liveness done holds, got violated: done: the response"
        " never comes: the run waits for ever in a state where no deadline is active; the"
        " obligation starts at step 0",
        "lasso counterexample, 0 events:",
        "    0  t=0          initial state",
        "  --- then nothing happens for ever: no deadline is active, time passes without"
        " end ---"])


@pytest.mark.slow  # about a second: kept out of the quick subset
def test_a_region_other_than_expected_fails_with_a_point(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", window=WINDOW.replace("T <= 5", "T < 5 or T > 9"))
    result = _run(pytester, "-k", "region")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["window.kvr:4: expected the safe region T < 5 or T > 9",
                                 "found T <= 5",
                                 "they differ at T=* (*)"])
    pytester.makefile(".kvr", window=WINDOW.replace("T <= 5", "not (T > 5) and T >= 0"))
    _run(pytester, "-k", "region").assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_malformed_expectation_is_one_line(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", window=WINDOW.replace("# expect: holds", "# expect: fine"))
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["window.kvr:1: `# expect:` takes one verdict (holds,"
                                 " violated, unreachable, inconclusive, error), not `fine`"])
    assert "Traceback" not in result.stdout.str()


def test_an_unknown_property_names_the_declared_ones(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", window=WINDOW.replace("# expect fine:", "# expect fien:"))
    result = _run(pytester)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["window.kvr:2: `window` declares no property or query"
                                 " `fien` (it declares: deadlock, fine, finished)"])


def test_a_broken_spec_fails_with_its_diagnostics(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON)
    pytester.makefile(".kvr", window=WINDOW.replace("x >= T", "y >= T"))
    result = _run(pytester)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*window.kvr:10:32: error?KVR101?: unknown clock `y`",
                                 " 10 | event a.go() when not done and y >= T do done := true"])
    # Once per item in the failure reports (the short summary, which repeats it when the
    # CI variable is set, comes after them).
    reports = result.stdout.str().split("short test summary info")[0]
    assert reports.count("unknown clock `y`") == 4


@pytest.mark.slow
def test_a_bad_timeout_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini(ON + "kvrace_timeout = soon\n")
    pytester.makefile(".kvr", window=WINDOW)
    result = _run(pytester)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*kvrace_timeout = soon: not a number of seconds*"])


def test_the_plugin_is_registered_and_off_in_this_repository() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {
        "kvrace": "checker.testing.pytest_plugin"}
    ini = project["tool"]["pytest"]["ini_options"]
    assert "kvrace_specs" not in ini and "--kvrace-specs" not in ini["addopts"]


def test_this_repositorys_collection_is_unchanged(pytester: pytest.Pytester) -> None:
    # tests/semantics holds specs with `# expect:` lines of their own (read by
    # test_differential.py and test_liveness.py): with the plugin loaded, this
    # repository's configuration still collects exactly the same items.
    args = ("--collect-only", "-q", "-c", str(ROOT / "pyproject.toml"), "--rootdir",
            str(ROOT), "-o", "addopts=", "-p", "no:cacheprovider",
            str(ROOT / "tests" / "semantics"), str(ROOT / "tests" / "test_ci_hooks.py"))
    without = pytester.runpytest_inprocess("-p", "no:kvrace", *args)
    with_plugin = pytester.runpytest_inprocess(*PLUGIN, *args)
    assert with_plugin.ret == without.ret == pytest.ExitCode.OK
    items = [line for line in with_plugin.outlines if "::" in line]
    assert items == [line for line in without.outlines if "::" in line]
    assert items and not any(".kvr" in line for line in items)
    assert any(p.suffix == ".kvr" and "# expect:" in p.read_text(encoding="utf-8")
               for p in (ROOT / "tests" / "semantics").iterdir())


def test_loading_the_plugin_loads_no_engine() -> None:
    # Every pytest run of a machine with kvrace installed loads the plugin.
    code = ("import sys, checker.testing.pytest_plugin; "
            "print(sorted(m for m in ('z3', 'lark', 'checker.api', 'checker.engines')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert out == "[]\n"


def test_parse_reads_every_kind_of_line() -> None:
    got = ex.parse("model m\n# expect: holds\n#expect mutex : violated\n"
                   "  # expect params: T=7, N = 1/2\n# expect region: T > 1 or T < 0\n"
                   "# expected: nothing\n# expect the worst: no\n", "m.kvr")
    assert got.items == (
        ex.Expectation(ex.ExpectKind.VERDICT, "check", "holds", 2),
        ex.Expectation(ex.ExpectKind.PROPERTY, "mutex", "violated", 3),
        ex.Expectation(ex.ExpectKind.REGION, "region", "T > 1 or T < 0", 5))
    assert got.params == {"T": Fraction(7), "N": Fraction(1, 2)}
    assert not ex.has_expectations("# expected: nothing\n# expectation: none\n")


@pytest.mark.parametrize(("text", "message"), [
    ("# expect: holds\n# expect: violated\n",
     "m.kvr:2: `# expect:` again (first at line 1)"),
    ("# expect mutex: reachable\n# expect mutex: holds\n",
     "m.kvr:2: `# expect mutex:` again (first at line 1)"),
    ("# expect params: T\n", "m.kvr:1: `# expect params:` takes NAME=VALUE, ...; not `T`"),
    ("# expect params: T=x\n",
     "m.kvr:1: `# expect params:` takes NAME=VALUE, ...; not `T=x`"),
    ("# expect region:\n", "m.kvr:1: `# expect region:` needs the region"),
    ("# expect mutex: fails\n", "m.kvr:1: `# expect mutex:` takes holds or violated (a"
     " property), reachable or unreachable (a query), not `fails`"),
])
def test_parse_refuses_malformed_lines(text: str, message: str) -> None:
    with pytest.raises(ex.ExpectationError) as info:
        ex.parse(text, "m.kvr")
    assert str(info.value) == message
