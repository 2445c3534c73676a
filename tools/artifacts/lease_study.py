"""How long must vLLM's NIXL lease be, as the context grows?

``python -m tools.artifacts --only measurements`` writes its table to
``paper/data/lease_study.csv``; the paper and ``spec/README.md`` show it.

vLLM's decode (D) reads a finished prefill's blocks from P with one RDMA READ
per remote rank once the request is scheduled (``nixl/pull_worker.py``
``_read_blocks_for_req``), or, in push mode, P writes them into D's blocks
once D's PUSH_REG arrives (``nixl/push_worker.py`` ``_do_start_push_kv``).
The transfer moves the whole prompt's KV at once: there are no chunks, so the
read (or write) time grows with the context.  Each row fixes a context length
and gives three instances:

* **measured** (``spec/vllm/lease_expired_read.kvr``): no renewal reaches P,
  D's wait is 50-62 s (aws-samples/aws-do-eks #84); the minimal initial lease
  ``L`` that keeps the read clear of P's reuse;
* **renewed** (``spec/vllm/lease_renewal.kvr``): heartbeats reach P (PR
  #41383); the minimal extension ``E`` per heartbeat at ``L`` = 30 s,
  ``H`` = 5 s, ``T_hb`` = 1 s;
* **push** (``spec/vllm/push_write_after_expiry.kvr``): push mode without
  renewal (#53095), D's PUSH_REG up to 62 s after the grant, a 5 s handshake;
  the minimal ``L``.

For each instance the script synthesizes the safe region over the one free
parameter with the others fixed, reads the minimal value off it, and
cross-checks it with the zone explorer just below it, at it and just above it.

Inputs (all stated here; change them and rerun):

* KV bytes per token: the SGLang study's model, DeepSeek-V3's MLA cache,
  70,272 B (:mod:`tools.artifacts.study`); vLLM's block layout does not change
  the byte count.
* Link bandwidth: 12 GB/s (an assumption, the slow end of one RDMA NIC), so
  ``T_read`` (``T_write`` in push mode) is the prompt's KV over 12 GB/s,
  rounded up to the millisecond.
* The defaults compared against: ``kv_lease_duration`` 30 s and its
  extension 20 s (2L/3), and aws-do-eks #84's remedy, a 300 s lease.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from checker.api import check
from checker.language import load_text
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.smt.synth import explore_parametric, safe_region
from tools.artifacts import study

CSV = Path("paper") / "data" / "lease_study.csv"
EPS = Fraction(1, 1000)
DEFAULT_LEASE = Fraction(30)  # kv_lease_duration
DEFAULT_EXTENSION = Fraction(20)  # 2 * 30 // 3
REMEDY_LEASE = Fraction(300)  # aws-do-eks #84's KV_LEASE_DURATION


@dataclass(frozen=True)
class Case:
    """One instance family: the spec, its free parameter, what the row fixes."""

    name: str
    spec: Path
    free: str
    size_param: str  # the parameter the row's transfer time goes into
    wide: dict[str, str]  # param lines replaced so that the row's values fit
    default: Fraction  # the deployed value of ``free``
    remedy: Fraction | None = None  # a value to compare against as well


CASES = (
    Case("measured", Path("spec") / "vllm" / "lease_expired_read.kvr", "L", "T_read",
         {"T_read": "param T_read in (0, 100] = 1"}, DEFAULT_LEASE, REMEDY_LEASE),
    Case("renewed", Path("spec") / "vllm" / "lease_renewal.kvr", "E", "T_read",
         {"T_read": "param T_read  in (0, 100] = 1"}, DEFAULT_EXTENSION),
    Case("push", Path("spec") / "vllm" / "push_write_after_expiry.kvr", "L", "T_write",
         {"T_write": "param T_write in (0, 100] = 1", "L": "param L       in [1, 600] = 30"},
         DEFAULT_LEASE, REMEDY_LEASE),
)


@dataclass(frozen=True)
class Bound:
    """The minimal value of a case's free parameter for one row, and its checks."""

    value: Fraction
    strict: bool
    below: str
    at: str
    above: str

    def covers(self, x: Fraction) -> bool:
        """Whether the parameter set to ``x`` is safe."""
        return x > self.value if self.strict else x >= self.value


@dataclass(frozen=True)
class Row:
    """One context length."""

    context: str
    tokens: int
    transfer: Fraction  # seconds: the prompt's KV over the slow link
    bounds: dict[str, Bound]

    @property
    def gb(self) -> Fraction:
        return Fraction(self.tokens * study.KV_BYTES_PER_TOKEN, study.GB)


def transfer_time(tokens: int) -> Fraction:
    """The prompt's KV over the slow link, rounded up to the millisecond."""
    return study.ceil_ms(Fraction(tokens * study.KV_BYTES_PER_TOKEN, study.LINK_SLOW))


def wide_spec(root: Path, case: Case) -> ir.Spec:
    """The case's spec with its ``param`` lines widened (text substitution)."""
    text = (root / case.spec).read_text(encoding="utf-8")
    for name, line in case.wide.items():
        text, n = re.subn(rf"^param {name}\b.*$", line, text, flags=re.MULTILINE)
        if n != 1:
            raise RuntimeError(f"{case.spec}: expected one `param {name}` line, found {n}")
    return load_text(text, f"{case.spec} (wide ranges)")


def lower_bound(spec: ir.Spec, free: str, values: dict[str, Fraction]) -> tuple[Fraction, bool]:
    """Synthesize over ``free`` and read ``free > b`` (or ``>=``) off the region."""
    result = explore_parametric(SpecModel(spec, values), [free])
    if not result.complete:
        raise RuntimeError(f"{values}: synthesis inconclusive ({result.limit})")
    cnf = safe_region(result)
    if len(cnf) != 1 or len(cnf[0]) != 1:
        raise RuntimeError(f"expected a single bound on {free}, got {cnf!r}")
    c = cnf[0][0]
    coefs = dict(c.coefs)
    key = f"p:{free}"
    if set(coefs) != {key} or coefs[key] >= 0:
        raise RuntimeError(f"expected a lower bound on {free}, got {c!r}")
    return c.const / -coefs[key], bool(c.strict)


def bound(spec: ir.Spec, case: Case, transfer: Fraction) -> Bound:
    """The minimal safe value for one row, checked just below, at and just above it."""
    values = {case.size_param: transfer}
    value, strict = lower_bound(spec, case.free, values)

    def verdict(x: Fraction) -> str:
        return check(spec, {**values, case.free: x}, timestamps=False).verdict

    return Bound(value, strict, verdict(value - EPS), verdict(value), verdict(value + EPS))


def lease_study(root: Path, contexts: list[str] | None = None,
                progress: bool = False) -> list[Row]:
    """The study's rows (every context length of the SGLang study by default)."""
    specs = {case.name: wide_spec(root, case) for case in CASES}
    rows = []
    for context in contexts or list(study.SIZES):
        tokens = study.SIZES[context]
        t = transfer_time(tokens)
        found = {case.name: bound(specs[case.name], case, t) for case in CASES}
        row = Row(context, tokens, t, found)
        if progress:
            print(f"  {context:>4}: " + ", ".join(
                f"{c.name} {c.free} > {study.fmt(found[c.name].value)}" for c in CASES),
                file=sys.stderr)
        rows.append(row)
    return rows


COLUMNS = ["context", "tokens", "kv_gb", "transfer_s",
           *(f"{case.name}_{k}" for case in CASES
             for k in ("bound", "strict", "below", "at", "above", "default_safe", "remedy_safe"))]
"""The CSV's columns (no run times, so that reruns reproduce the file exactly)."""


def cells(row: Row) -> list[str]:
    d: dict[str, object] = {"context": row.context, "tokens": row.tokens,
                            "kv_gb": f"{float(row.gb):.2f}", "transfer_s": row.transfer}
    for case in CASES:
        b = row.bounds[case.name]
        d[f"{case.name}_bound"] = b.value
        d[f"{case.name}_strict"] = b.strict
        d[f"{case.name}_below"] = b.below
        d[f"{case.name}_at"] = b.at
        d[f"{case.name}_above"] = b.above
        d[f"{case.name}_default_safe"] = b.covers(case.default)
        d[f"{case.name}_remedy_safe"] = "-" if case.remedy is None else b.covers(case.remedy)
    return [study.fmt(v) if isinstance(v, Fraction) else str(v)
            for v in (d[c] for c in COLUMNS)]


def csv_text(rows: list[Row]) -> str:
    """The study's CSV (``paper/data/lease_study.csv``)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(cells(r) for r in rows)
    return out.getvalue()


def readme_lines(rows: Sequence[dict[str, str]]) -> list[str]:
    """The study as a Markdown section (for ``spec/README.md``), from its CSV rows."""
    lines = [
        "## How long vLLM's lease must be, by context length",
        "",
        "From `paper/data/lease_study.csv` (`tools/artifacts/lease_study.py`).  vLLM moves a",
        "prompt's whole KV in one transfer (no chunks), at"
        f" {study.LINK_SLOW // study.GB} GB/s here (an assumption; the",
        "SGLang study's DeepSeek-V3 bytes per token).  *Measured*: `lease_expired_read`, no",
        "renewal reaches P, D waits 50-62 s (aws-do-eks #84), the minimal initial lease L.",
        "*Renewed*: `lease_renewal`, heartbeats reach P, the minimal extension E at L = 30,",
        "H = 5, T_hb = 1.  *Push*: `push_write_after_expiry` without renewal (#53095),",
        "PUSH_REG up to 62 s after the grant, a 5 s handshake, the minimal L.  kvrace",
        "synthesizes each bound and checks it just below, at and just above it.",
        "",
        "| context | KV GB | transfer (s) | measured: L needed | 30 s | 300 s |"
        " renewed: E needed | 20 s | push: L needed | 30 s | 300 s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def need(r: dict[str, str], name: str, free: str) -> str:
        op = ">" if r[f"{name}_strict"] == "True" else ">="
        return f"{free} {op} {r[f'{name}_bound']}"

    def yes(v: str) -> str:
        return {"True": "yes", "False": "no"}.get(v, v)

    for r in rows:
        lines.append(
            f"| {r['context']} | {r['kv_gb']} | {r['transfer_s']} | {need(r, 'measured', 'L')}"
            f" | {yes(r['measured_default_safe'])} | {yes(r['measured_remedy_safe'])}"
            f" | {need(r, 'renewed', 'E')} | {yes(r['renewed_default_safe'])}"
            f" | {need(r, 'push', 'L')} | {yes(r['push_default_safe'])}"
            f" | {yes(r['push_remedy_safe'])} |")
    lines += [
        "",
        "With renewals the bound does not grow with the context (the heartbeats keep",
        "coming while D reads); without them the lease must outlast D's whole wait plus",
        "the transfer, which the 30 s default never does at the measured gaps.",
    ]
    return lines
