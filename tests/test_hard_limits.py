"""Hard limits of the command line: every number, option and input file is
bounded and checked, and bad ones are a clear message with exit 2 — never a
traceback, a hang or a lost verdict."""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run_cli

from checker.cli import main

DEFERRED = "spec/sglang/deferred_release.kvr"


# ---- numbers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value, words", [
    ("1e99999999999", "exponent"),
    ("1e-99999999999", "exponent"),
    ("9" * 5000, "more than 30 digits"),
    ("1/" + "7" * 40, "more than 30 digits"),
    ("nan", "not a number"),
    ("inf", "not a number"),
    ("1/0", "divides by zero"),
    ("0x10", "not a number"),
])
def test_bad_parameter_values_are_refused_at_once(in_root: object, value: str,
                                                   words: str) -> None:
    start = time.monotonic()
    code, out, err = run_cli("check", DEFERRED, "-p", f"T_hold={value}")
    assert time.monotonic() - start < 5
    assert code == 2 and out == ""
    assert err.startswith("--param T_hold: ") and words in err
    assert len(err) < 200


# Python's int(), float(), Fraction() and regular expressions' \d all take these.
NON_ASCII_DIGITS = ["\u0663", "7\u0660", "\uff17.5", "\u0967/2", "1e\u0661", "1_0"]


@pytest.mark.parametrize("value", NON_ASCII_DIGITS)
def test_only_ascii_digits_make_a_parameter_value(in_root: object, value: str) -> None:
    code, out, err = run_cli("check", DEFERRED, "-p", f"T_hold={value}")
    assert code == 2 and out == ""
    assert err.startswith("--param T_hold: ") and "is not a number" in err


@pytest.mark.parametrize("argv", [
    ["simulate", DEFERRED, "--runs", "\u0663"],
    ["simulate", DEFERRED, "--seed", "\u0663"],
    ["simulate", DEFERRED, "--epsilon", "0.\u0660\u0661"],
    ["check", DEFERRED, "--timeout", "\u0663"],
    ["check", DEFERRED, "--max-states", "\u0663"],
    ["view", DEFERRED, "--port", "\u0663"],
    ["simulate", DEFERRED, "--delay", "T_flight=uniform(\u0661, 2)"],
    ["simulate", DEFERRED, "--delay", "T_flight=exp(\u0661)"],
    ["simulate", DEFERRED, "--delay", "T_flight=mixture(\u0661*exp(1), 1*exp(2))"],
])
def test_only_ascii_digits_make_an_option_value(in_root: object, argv: list[str]) -> None:
    code, out, err = run_cli(*argv)
    assert (code, out) == (2, ""), err
    assert any(w in err for w in ("not a number", "not a weight", "expected a"))


def test_only_ascii_digits_make_an_empirical_sample(tmp_path: Path) -> None:
    from checker.simulate.distributions import DistributionError, read_samples

    path = tmp_path / "lat.csv"
    path.write_text("latency\n1.5\n\u0663\n", encoding="utf-8")
    with pytest.raises(DistributionError, match=r"lat\.csv:3: '\u0663' is not a number"):
        read_samples(str(path))


@pytest.mark.parametrize("field, value", [("time", "\u0663"), ("index", "\u0663")])
def test_only_ascii_digits_in_a_trace_file(good_trace: dict[str, Any], field: str,
                                          value: str) -> None:
    from checker.model.trace import TraceFormatError, from_itf

    data = copy.deepcopy(good_trace)
    _state1(data)[field] = value
    with pytest.raises(TraceFormatError, match="is not a"):
        from_itf(data)


@pytest.mark.parametrize("value", ["7.5", "15/2", "0.75e1", "+7.5"])
def test_parameter_values_in_every_notation(in_root: object, value: str) -> None:
    code, out, _ = run_cli("check", DEFERRED, "-p", f"T_hold={value}", "-q")
    assert code == 0 and "T_hold=7.5" in out


def test_a_huge_number_in_an_assumption_is_a_positioned_error(in_root: object) -> None:
    code, out, err = run_cli("prove", DEFERRED, "--assume", "T_hold > 1 + " + "9" * 5000)
    assert code == 2 and out == ""
    assert err.startswith("<--assume>:1:14: error[KVR008]: number with more than 30 digits")
    assert "Traceback" not in err


def test_a_product_of_quantifiers_is_bounded_at_lint(tmp_path: Path) -> None:
    spec = tmp_path / "cube.kvr"
    spec.write_text("model cube\ntype T = 0..65535\nactor a\nvar n : 0..3 = 0\n"
                    "event a.go() when n < 3 do n := n + 1\n"
                    "invariant all: forall i: T . n < 5 or (forall j: T . forall k: T . i == k)\n"
                    "invariant ok: forall i: T . forall j: 0..15 . n < 5 or i == j\n")
    start = time.monotonic()
    code, out, err = run_cli("lint", str(spec))
    assert time.monotonic() - start < 5
    assert code == 2 and out == ""
    assert err.startswith(f"{spec}:6:40: error[KVR301]: this `forall` evaluates 4,294,967,296"
                          " bindings (its nested quantifiers multiplied; at most 1,048,576)")
    assert err.count("error[") == 1  # 65,536 x 16 is within the bound


# ---- options -----------------------------------------------------------------------------------

_COMMANDS = {
    "check": ["check", DEFERRED],
    "prove": ["prove", DEFERRED, "--assume", "T_hold > 1"],
    "synth": ["synth", DEFERRED],
    "validate": ["validate", DEFERRED, "tests/data/logs/deferred_release_ok.jsonl"],
}


@pytest.mark.parametrize("command", sorted(_COMMANDS))
@pytest.mark.parametrize("option, value, words", [
    ("--timeout", "nan", "expected a number of seconds"),
    ("--timeout", "inf", "expected a number of seconds"),
    ("--timeout", "1e999", "expected a number of seconds"),
    ("--timeout", "0", "must be more than 0 seconds"),
    ("--timeout", "-1", "must be more than 0 seconds"),
    ("--max-states", "-5", "must be at least 1"),
    ("--max-states", "0", "must be at least 1"),
    ("--max-states", "2.5", "expected a whole number"),
])
def test_bad_limits_are_refused_by_every_command(in_root: object, command: str, option: str,
                                                  value: str, words: str) -> None:
    code, out, err = run_cli(*_COMMANDS[command], f"{option}={value}")
    assert (code, out) == (2, "")
    assert err == f"kvrace {command}: argument {option}: {words}, got {value!r}\n"


@pytest.mark.parametrize("argv", [
    ["check", DEFERRED, "--max-memory=0"],
    ["check", DEFERRED, "--max-memory=-5"],
    ["graph", DEFERRED, "-o", "x.dot", "--max-nodes=0"],
])
def test_bad_counts_are_refused(in_root: object, argv: list[str]) -> None:
    code, out, err = run_cli(*argv)
    assert (code, out) == (2, "") and "must be at least 1" in err


# ---- text from a spec in every output ----------------------------------------------------------

# An assert message with a terminal colour escape, BEL, a C0 and a C1 control, Graphviz
# escapes (written `\\N` in the spec: `\x` is the character x) and HTML specials.
ESCAPES_SPEC = (
    'model esc\nactor a\nvar x : 0..1 = 0\nevent a.go() when x == 0 do\n  x := 1\n'
    '  assert false : "boom \x1b[31mred\x07 \\\\N \\\\G \x01\x9b <b>&amp; {x}"\n'
)
MESSAGE = "boom \x1b[31mred\x07 \\N \\G \x01\x9b <b>&amp; 1"
CONTROLS = ("\x1b", "\x07", "\x01", "\x9b")


@pytest.fixture
def esc_spec(tmp_path: Path) -> Path:
    path = tmp_path / "esc.kvr"
    path.write_text(ESCAPES_SPEC, encoding="utf-8")
    return path


def test_control_characters_never_reach_the_terminal(esc_spec: Path) -> None:
    code, out, err = run_cli("check", str(esc_spec))
    assert code == 1
    assert "VIOLATED: assert: boom \ufffd[31mred\ufffd \\N \\G \ufffd\ufffd <b>&amp; 1" in out
    assert not any(c in out + err for c in CONTROLS)


def test_json_keeps_the_message_exactly(esc_spec: Path) -> None:
    code, out, _ = run_cli("check", str(esc_spec), "--json")
    assert code == 1
    assert not any(c in out for c in CONTROLS)  # escaped by JSON itself
    assert json.loads(out)["message"] == MESSAGE


def test_diagram_labels_are_valid_and_escaped(esc_spec: Path, tmp_path: Path) -> None:
    code, _, err = run_cli("check", str(esc_spec), "--diagram", str(tmp_path / "d.dot"),
                           "--trace", str(tmp_path / "t.json"))
    assert code == 1 and "warning" not in err
    dot = (tmp_path / "d.dot").read_text(encoding="utf-8")
    assert not any(c in dot for c in CONTROLS)
    assert "\\\\N \\\\G" in dot and "&lt;b&gt;&amp;amp;" in dot
    assert json.loads((tmp_path / "t.json").read_text())["#meta"]["message"] == MESSAGE


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
def test_graphviz_shows_the_message_literally(esc_spec: Path, tmp_path: Path) -> None:
    svg = tmp_path / "d.svg"
    code, _, err = run_cli("check", str(esc_spec), "--diagram", str(svg))
    assert code == 1 and "warning" not in err, err
    text = svg.read_text(encoding="utf-8")
    assert "\\N \\G" in text and "&lt;b&gt;&amp;amp; 1" in text


# ---- the verdict survives failed side outputs --------------------------------------------------

IMMEDIATE = "spec/sglang/immediate_release.kvr"


@pytest.mark.parametrize("option", ["--diagram", "--trace"])
def test_an_unwritable_side_output_is_a_warning(in_root: object, tmp_path: Path,
                                                option: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / ("x.svg" if option == "--diagram" else "x.json")  # under a file
    code, out, err = run_cli("check", IMMEDIATE, option, str(target))
    assert code == 1
    assert "VIOLATED: assert: write of A chunk 0 lands in slot s0 owned by B" in out
    assert err.startswith("kvrace: warning: cannot ") and "verdict above stands" in err


def test_an_unknown_diagram_format_is_refused_before_the_run(in_root: object) -> None:
    code, out, err = run_cli("check", IMMEDIATE, "--diagram", "x.gif")
    assert (code, out) == (2, "") and "unknown format ('.gif')" in err


class _Failing(io.StringIO):
    """A stdout that fails like a full disk or a closed pipe."""

    def __init__(self, exc: OSError) -> None:
        super().__init__()
        self.exc = exc

    def write(self, text: str) -> int:
        raise self.exc


@pytest.mark.parametrize("spec, code", [(DEFERRED, 0), (IMMEDIATE, 1)])
def test_a_full_disk_keeps_the_verdicts_exit_code(in_root: object, spec: str,
                                                  code: int) -> None:
    err = io.StringIO()
    got = main(["check", spec, "-q"], _Failing(OSError(28, "No space left on device")), err)
    assert got == code
    assert err.getvalue() == ("kvrace: warning: the output could not be written ([Errno 28] No"
                              f" space left on device); exit code {code} is the result\n")


def test_a_closed_pipe_is_silent(in_root: object) -> None:
    err = io.StringIO()
    assert main(["check", IMMEDIATE, "-q"], _Failing(BrokenPipeError(32, "pipe")), err) == 1
    assert err.getvalue() == ""


@pytest.mark.slow
def test_closed_and_full_stdout_in_a_real_process(in_root: object) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for spec, code in [(DEFERRED, 0), (IMMEDIATE, 1)]:
        with open(os.devnull, "w") as full:  # /dev/full where it exists
            target = open("/dev/full", "w") if os.path.exists("/dev/full") else full  # noqa: SIM115
            proc = subprocess.run([sys.executable, "-m", "checker", "check", spec],
                                  stdout=target, stderr=subprocess.PIPE, env=env, check=False)
            target.close()
        assert proc.returncode == code
        assert b"Traceback" not in proc.stderr
        proc = subprocess.run([sys.executable, "-m", "checker", "check", spec],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                              check=False, preexec_fn=lambda: os.close(1))
        assert proc.returncode == code and b"Traceback" not in proc.stderr
        assert b"could not be written" in proc.stderr


def test_an_escaping_exception_is_an_internal_error(in_root: object,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from checker import api

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(api, "check", broken)
    code, out, err = run_cli("check", DEFERRED)
    assert (code, out) == (70, "")
    assert err.startswith("kvrace check: internal error: KeyError: 'oops'\n")
    assert "please report it" in err and "Traceback" not in err


# ---- draw validates its input ------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_trace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("trace") / "t.json"
    code, _, _ = run_cli("check", str(ROOT / IMMEDIATE), "-q", "--trace", str(path))
    assert code == 1
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _state1(d: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = d["states"][1]["#meta"]
    return meta


@pytest.mark.parametrize("change, words", [
    (lambda d: _state1(d).update(event=5), "states[1].#meta.event: expected a string"),
    (lambda d: _state1(d).update(args=[1, 2]), "states[1].#meta.args[0]: expected a string"),
    (lambda d: _state1(d).update(args="A"), "states[1].#meta.args: expected a list"),
    (lambda d: _state1(d).update(failure=["x"]), "states[1].#meta.failure: expected a string"),
    (lambda d: _state1(d).update(actor=["decode"]), "states[1].#meta.actor: expected a string"),
    (lambda d: _state1(d).update(receives={"a": 1}),
     "states[1].#meta.receives: expected an integer"),
    (lambda d: _state1(d).update(time="1e99999999999"), "states[1].#meta.time: "),
    (lambda d: _state1(d).update(time="9" * 5000), "more than 30 digits"),
    (lambda d: _state1(d).update(time=1.5), "states[1].#meta.time: expected a number"),
    (lambda d: _state1(d).pop("label"), "states[1].#meta: missing `label`"),
    (lambda d: d["states"][2].pop("owner"), "states[2]: missing `owner`"),
    (lambda d: d["#meta"].update(actors=[["a"]]), "#meta.actors[0]: expected a string"),
    (lambda d: d["#meta"].update(params={"T": "nan"}), "#meta.params.T: "),
    (lambda d: d.pop("states"), "the file: missing `states`"),
    (lambda d: d["states"].clear(), "at least one state"),
    (lambda d: d["states"][1].update(owner={"#map": [["s0", {"x": 1}]]}),
     "states[1].owner[0]: expected a value"),
])
def test_draw_refuses_malformed_traces(tmp_path: Path, good_trace: dict[str, Any],
                                       change: Callable[[dict[str, Any]], object],
                                       words: str) -> None:
    data = copy.deepcopy(good_trace)
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    start = time.monotonic()
    code, out, err = run_cli("draw", str(path), "-o", str(tmp_path / "x.dot"))
    assert time.monotonic() - start < 5
    assert (code, out) == (2, ""), err
    assert err.startswith(f"{path}: not a kvrace trace: ") and words in err
    assert not (tmp_path / "x.dot").exists()


@pytest.mark.parametrize("content, words", [
    ("[" * 100_000, "not a JSON trace"),
    ('{"a": ' + "9" * 5000 + "}", "not a JSON trace"),
    ("\xff", "not a JSON trace"),
    ("", "not a JSON trace"),
])
def test_draw_refuses_files_that_are_not_json(tmp_path: Path, content: str,
                                              words: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content.encode("latin-1"))
    code, out, err = run_cli("draw", str(path), "-o", str(tmp_path / "x.dot"))
    assert (code, out) == (2, "") and words in err and len(err) < 300


def test_draw_recognises_check_json_output(in_root: object, tmp_path: Path) -> None:
    _, out, _ = run_cli("check", IMMEDIATE, "--json")
    path = tmp_path / "result.json"
    path.write_text(out)
    code, out, err = run_cli("draw", str(path), "-o", str(tmp_path / "x.dot"))
    assert code == 0 and out.startswith("wrote"), err
    _, out, _ = run_cli("check", DEFERRED, "--json")
    path.write_text(out)
    code, _, err = run_cli("draw", str(path), "-o", str(tmp_path / "x.dot"))
    assert code == 2 and "output of `kvrace check --json` without a counterexample" in err


def test_draw_accepts_what_check_writes(tmp_path: Path, good_trace: dict[str, Any]) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(good_trace))
    code, out, err = run_cli("draw", str(path), "-o", str(tmp_path / "x.dot"))
    assert code == 0 and out.startswith("wrote"), err


# ---- draw bounds its output and leaves nothing half-written -----------------------------------


@pytest.mark.slow  # about a second: kept out of the quick subset
def test_draw_bounds_steps_times_actors_before_drawing(tmp_path: Path,
                                                       good_trace: dict[str, Any]) -> None:
    data = copy.deepcopy(good_trace)
    data["#meta"]["actors"] = [f"a{i}" for i in range(1000)]
    data["states"] = [copy.deepcopy(data["states"][0])] + [
        copy.deepcopy(data["states"][1]) for _ in range(1999)]
    for i, st in enumerate(data["states"]):
        st["#meta"]["index"] = i
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    start = time.monotonic()
    code, out, err = run_cli("draw", str(path), "-o", str(tmp_path / "x.dot"))
    assert time.monotonic() - start < 10
    assert (code, out) == (2, ""), err
    assert err == (f"cannot draw {tmp_path / 'x.dot'}: the trace has 2,000 steps by 1,000"
                   " actors (2,000,000 cells; a diagram has at most 100,000): draw a shorter"
                   " trace\n")
    assert list(tmp_path.iterdir()) == [path]


def test_a_diagram_source_has_a_bounded_size(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.present import dot

    monkeypatch.setattr(dot, "MAX_DOT_BYTES", 2**20)
    with pytest.raises(dot.RenderError, match=r"source would be 2 MiB \(at most 1 MiB\)"):
        dot.render("digraph {}" + " " * 2 * 2**20, tmp_path / "x.svg")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_while_graphviz_runs_leaves_no_file(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.present import dot

    def interrupted(*args: object, **kwargs: object) -> None:
        assert (tmp_path / "x.dot").exists()  # the source is written first
        raise KeyboardInterrupt

    monkeypatch.setattr(dot.execute, "run_check", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dot.render("digraph {}", tmp_path / "x.svg")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_write_leaves_no_partial_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from checker.present import dot

    real = Path.write_bytes

    def half(self: Path, data: bytes) -> int:
        real(self, data[: len(data) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_bytes", half)
    with pytest.raises(KeyboardInterrupt):
        dot.render("digraph { a -> b }", tmp_path / "x.dot")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
def test_a_diagram_never_replaces_a_dot_file_it_did_not_write(in_root: object,
                                                               tmp_path: Path) -> None:
    mine = tmp_path / "x.dot"
    mine.write_text("digraph mine { hand -> written }\n")
    code, _, err = run_cli("check", IMMEDIATE, "-q", "--diagram", str(tmp_path / "x.svg"))
    assert code == 1
    assert mine.read_text() == "digraph mine { hand -> written }\n"
    assert err == (f"wrote {tmp_path / 'x.svg'}; warning: {mine} exists and is not a diagram"
                   " kvrace wrote: left as it is, the source was not written\n")
    assert (tmp_path / "x.svg").read_text().lstrip().startswith("<?xml")
    # kvrace's own source is replaced on the next run, silently
    mine.unlink()
    for _ in range(2):
        code, _, err = run_cli("check", IMMEDIATE, "-q", "--diagram", str(tmp_path / "x.svg"))
        assert err == f"wrote {tmp_path / 'x.svg'} (and its source {mine})\n"
    assert mine.read_text().startswith("// message-sequence chart: immediate_release")
