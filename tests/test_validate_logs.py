"""``kvrace validate`` on log excerpts from public threads and on text logs read
through the shipped mappings (``spec/mappings``); see ``tests/data/logs/README.md``."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, run_cli

LOGS = "tests/data/logs"
LEASE = "spec/vllm/lease_expired_read.kvr"
IMMEDIATE = "spec/sglang/immediate_release.kvr"
DEFERRED = "spec/sglang/deferred_release.kvr"
OFF_OBSERVABLE = "prefill.post,decode.release,decode.land,decode.allocate(B, s0)"


def cli(*argv: str) -> tuple[int, str, str]:
    return run_cli("validate", *argv)


def vllm_84(*extra: str) -> tuple[int, str, str]:
    return cli(LEASE, f"{LOGS}/aws_do_eks_84_prefill.log", "--map",
               "spec/mappings/vllm_nixl.toml", "--clock-error", "1", "--start",
               "first-120:first", *extra)


def test_aws_do_eks_84_conforms_and_may_contain_the_stale_read() -> None:
    code, out, _ = vllm_84()
    assert code == 0
    assert out.splitlines()[:2] == [
        "CONFORMS: the 2 events of tests/data/logs/aws_do_eks_84_prefill.log are a run of"
        " the spec",
        "warning: some runs consistent with this log break assert in decode.respond() at"
        " tests/data/logs/aws_do_eks_84_prefill.log:2: client of A gets HTTP 200 from KV"
        " blocks P released and gave to B (P logged it: true); others do not"]


def test_aws_do_eks_84_is_not_a_run_with_the_longer_lease() -> None:
    code, out, _ = vllm_84("-p", "L=300")
    assert code == 6
    assert out.splitlines()[0] == (
        "DEVIATES at tests/data/logs/aws_do_eks_84_prefill.log:1: `prefill.expire` at"
        " t=08-16 08:09:07 is not possible here; possible next events were"
        " `decode.read_done()` at t in [08-16 08:07:57, 08-16 08:10:10]; no line matches")


def test_sglang_35049_off_needs_a_longer_flight_and_then_shows_the_race() -> None:
    log = f"{LOGS}/sglang_35049_off.jsonl"
    code, out, _ = cli(IMMEDIATE, log, "--observable", OFF_OBSERVABLE, "--clock-error", "0.01")
    assert code == 6
    assert out.startswith("DEVIATES at tests/data/logs/sglang_35049_off.jsonl:11:"
                          " `decode.land(A, 0)` at t=884.8 is not possible here; possible next"
                          " events were `decode.land(A, 0)` at t in [881.3, 881.81]")
    code, out, _ = cli(IMMEDIATE, log, "--observable", OFF_OBSERVABLE, "--clock-error", "0.01",
                       "-p", "T_flight=7")
    assert code == 1
    assert out.splitlines()[1] == (
        "VIOLATED: this log contains a violation of assert in decode.land(A, 0) at"
        " tests/data/logs/sglang_35049_off.jsonl:11: write of A chunk 0 lands in slot s0"
        " owned by B")
    code, out, _ = cli(DEFERRED, log, "--observable", OFF_OBSERVABLE, "--clock-error", "0.01",
                       "-p", "T_flight=7", "-p", "T_hold=30")
    assert code == 6
    assert out.startswith("DEVIATES at tests/data/logs/sglang_35049_off.jsonl:9:"
                          " `decode.release(A)` at t=881.28 is not possible here;")


def test_sglang_35049_on_conforms() -> None:
    code, out, _ = cli(DEFERRED, f"{LOGS}/sglang_35049_on.jsonl", "--clock-error", "0.01",
                       "-p", "T_flight=7", "-p", "T_hold=30")
    assert code == 0
    assert out.splitlines()[0] == ("CONFORMS: the 2 events of"
                                   " tests/data/logs/sglang_35049_on.jsonl are a run of the spec")
    assert len(out.splitlines()) == 2  # no violation line


@pytest.mark.parametrize(("log", "code", "first"), [
    ("sglang_deferred_format.log", 0,
     "CONFORMS: the 3 events of tests/data/logs/sglang_deferred_format.log are a run of the"
     " spec"),
    ("sglang_deferred_format_early.log", 6,
     "DEVIATES at tests/data/logs/sglang_deferred_format_early.log:5: `decode.release(A)` at"
     " t=2026-08-17 10:00:20 is not possible here; possible next events were"
     " `decode.release(A)` from t=2026-08-17 10:00:29; the longest matching prefix ends at"
     " line 3"),
])
def test_sglang_text_logs_through_the_mapping(log: str, code: int, first: str) -> None:
    got, out, _ = cli(DEFERRED, f"{LOGS}/{log}", "--map", "spec/mappings/sglang.toml",
                      "--clock-error", "1", "--start", "first-60:first", "-p", "T_hold=30")
    assert got == code
    assert out.splitlines()[0] == first


@pytest.mark.parametrize(("text", "line", "message"), [
    ('unit = "s"\n\n[[event]]\nevent = "decode.release"\nregex = "(?P<t>[0-9.]+) (?P<r>"\n',
     5, "the regex of decode.release does not compile: missing ), unterminated subpattern"),
    ('unit = "s"\n\n[[event]]\nevent = "decode.relase"\nregex = "(?P<t>[0-9.]+) x"\n',
     4, "unknown event `decode.relase`: the spec declares no such event; did you mean"
        " `decode.release`?"),
    ('[[event]]\nevent = "decode.release"\nregex = "(?P<t>[0-9]+) (?P<rid>[A-Z])"\n', 3,
     "the regex of decode.release names a group `rid`, which is no parameter of"
     " decode.release (its parameters: r)"),
    ('[[event]]\nevent = "decode.release"\nregex = "(?P<t>[0-9]+) x"\nargs = { r = "Z" }\n', 4,
     "[[event]] decode.release: `Z` is not a value of `r` (its values: A, B)"),
    ('[[event]]\nevent = "decode.release"\nregex = "(?P<t>[0-9]+) x"\nargs = { q = "A" }\n', 4,
     "[[event]] decode.release: `args` names `q`, which is no parameter of decode.release"),
    ('[[event]]\nevent = "decode.release"\nregex = "(?P<t>[0-9]+) (?P<r>[AB])"\n'
     'args = { r = "A" }\n', 4,
     "[[event]] decode.release: `r` is both a group of the regex and a fixed argument"),
    ('[values]\nq = "order"\n[[event]]\nevent = "decode.release"\nregex = "(?P<t>[0-9]+)"\n',
     1, "[values]: `q` is no parameter of the events the mapping names"),
    ('event = [1, 2]\n', 1, "`event` is not a list of [[event]] tables"),
    ('[[event]]\nevent = "decode.release"\nregex = 5\n', 3,
     "[[event]] decode.release: `regex` is not a string"),
    ('unit = "s"\n[[event]]\nevent = "decode.release"\nregex = "release"\n',
     4, "the regex of decode.release has no timestamp group (?P<t>...)"),
    ('unit = "fortnights"\n[[event]]\nevent = "decode.release"\nregex = "(?P<t>x)"\n',
     1, "unknown time unit 'fortnights'"),
    ('unit = "s"\n[[event]\n', 2, "not a TOML mapping"),
])
def test_bad_mappings_name_their_line(tmp_path: Path, text: str, line: int,
                                      message: str) -> None:
    mapping = tmp_path / "map.toml"
    mapping.write_text(text, encoding="utf-8")
    code, out, err = cli(DEFERRED, f"{LOGS}/sglang_deferred_format.log", "--map", str(mapping))
    assert code == 2 and out == ""
    assert err.startswith(f"{mapping}:{line}: error: ") and message in err, err


def test_a_bad_timestamp_in_a_text_log(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("[2026-13-45 99:00:00 TP0] Deferred KV release for room 1 timed out\n",
                   encoding="utf-8")
    code, _, err = cli(DEFERRED, str(log), "--map", "spec/mappings/sglang.toml")
    assert code == 2
    assert err.startswith(f"{log}:1: error: timestamp '2026-13-45 99:00:00' does not match")


# ---- --free: the parameter region a log implies ------------------------------------------

@pytest.mark.parametrize(("argv", "code", "first"), [
    ([IMMEDIATE, f"{LOGS}/sglang_35049_off.jsonl", "--observable", OFF_OBSERVABLE,
      "--clock-error", "0.01", "--free", "T_flight"], 1,
     "CONFORMS: the 4 events of tests/data/logs/sglang_35049_off.jsonl are a run of the spec"
     " exactly when T_flight >= 5.98"),
    ([LEASE, f"{LOGS}/aws_do_eks_84_prefill.log", "--map", "spec/mappings/vllm_nixl.toml",
      "--clock-error", "1", "--start", "first-120:first", "--free", "L,Q_max"], 0,
     "CONFORMS: the 2 events of tests/data/logs/aws_do_eks_84_prefill.log are a run of the"
     " spec exactly when Q_max >= L + 18 and Q_max >= 50"),
    ([DEFERRED, f"{LOGS}/deferred_early_release.jsonl", "--free", "T_hold"], 0,
     "CONFORMS: the 6 events of tests/data/logs/deferred_early_release.jsonl are a run of the"
     " spec exactly when T_hold <= 5"),
    ([DEFERRED, f"{LOGS}/deferred_release_ok.jsonl", "--free", "T_hold,T_prop"], 0,
     "CONFORMS: the 7 events of tests/data/logs/deferred_release_ok.jsonl are a run of the"
     " spec exactly when T_hold <= 8 and T_prop >= 1.5"),
    ([DEFERRED, f"{LOGS}/never_allocated.jsonl", "--free", "T_hold,T_flight"], 6,
     "DEVIATES at tests/data/logs/never_allocated.jsonl:3: `prefill.post(B, 0)` at t=0.4 is"
     " not possible for any value of T_flight, T_hold within their ranges; the longest"
     " matching prefix ends at line 2"),
])
@pytest.mark.slow  # about a second: kept out of the quick subset
def test_the_region_a_log_implies(argv: list[str], code: int, first: str) -> None:
    got, out, _ = cli(*argv)
    assert got == code
    assert out.splitlines()[0] == first


def test_free_refuses_a_diagram_and_unknown_parameters() -> None:
    code, _, err = cli(DEFERRED, f"{LOGS}/deferred_release_ok.jsonl", "--free", "T_hold",
                       "--diagram", "x.svg")
    assert code == 2 and "--diagram does not go with --free" in err
    code, _, err = cli(DEFERRED, f"{LOGS}/deferred_release_ok.jsonl", "--free", "T_nope")
    assert code == 2 and "unknown parameter `T_nope`" in err


def test_the_tutorial_logs_are_the_tested_ones() -> None:
    """``docs/logs/`` (what the tutorial shows) holds copies of logs tested here."""
    docs = ROOT / "docs" / "logs"
    for path in sorted(docs.iterdir()):
        assert path.read_bytes() == (ROOT / LOGS / path.name).read_bytes(), path.name


def test_a_catastrophic_regex_ends_at_the_time_limit(tmp_path: Path) -> None:
    """A regex that backtracks for ever on a line: ``--timeout`` still ends the run as
    inconclusive (a signal stops the match), with or without ``--free``."""
    mapping = tmp_path / "map.toml"
    mapping.write_text('[[event]]\nevent = "router.abort"\nregex = \'^(?P<t>\\d+) (a+)+$\'\n',
                       encoding="utf-8")
    log = tmp_path / "x.log"
    log.write_text("1 " + "a" * 40 + "b\n", encoding="utf-8")
    for extra in ([], ["--free", "T_hold"]):
        code, out, _ = cli(DEFERRED, str(log), "--map", str(mapping), "--timeout", "0.3",
                           *extra)
        assert code == 3 and out.startswith("INCONCLUSIVE: time limit (0.3 s) reached"), out


def test_free_says_which_property_the_log_breaks() -> None:
    """With the flight time left open, the #35049 log conforms exactly when the write
    took no more than it, and then always contains the race (exit 1); the aws-do-eks
    log, for some values and some runs, contains the stale read."""
    code, out, _ = cli(IMMEDIATE, f"{LOGS}/sglang_35049_off.jsonl", "--observable",
                       OFF_OBSERVABLE, "--clock-error", "0.01", "--free", "T_flight")
    assert code == 1 and out.splitlines()[1] == (
        "VIOLATED: for every value of that region, this log contains a violation of assert"
        " in decode.land(A, 0) at tests/data/logs/sglang_35049_off.jsonl:11: write of A chunk"
        " 0 lands in slot s0 owned by B")
    code, out, _ = vllm_84("--free", "L,Q_max")
    assert code == 0 and out.splitlines()[1] == (
        "warning: some runs consistent with this log break assert in decode.respond() at"
        " tests/data/logs/aws_do_eks_84_prefill.log:2: client of A gets HTTP 200 from KV"
        " blocks P released and gave to B (P logged it: true); others do not (for some values"
        " of the region)")


@pytest.mark.slow  # polyhedra through a minute of unobserved events
def test_free_follows_a_response_past_the_last_line() -> None:
    """A's ack lost and the log kept until t=63: overdue for some values of the bound
    (those under 62), not for the others."""
    code, out, _ = cli("spec/sglang/strict_no_release_on_timeout.kvr",
                       f"{LOGS}/bounded_release_lost.jsonl", "--free", "T_bound")
    assert code == 0 and out.splitlines()[0].endswith("exactly when true")
    assert out.splitlines()[1].startswith("warning: some runs consistent with this log break"
                                          " property bounded_release[A]")
