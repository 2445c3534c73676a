"""How long must decode hold an aborted request's KV slot, as the context grows?

``python -m checker.artifacts --only measurements`` writes its table to
``paper/data/context_length.csv``; the paper plots it.

For each context length the script instantiates the parameters of
``spec/sglang/deferred_release.kvr`` (the upstream fix: decode holds an aborted
slot for ``T_hold``), synthesizes the safe region over ``T_hold`` alone with
the other parameters fixed (parametric zone exploration, EFsynth), reads the
minimal safe hold off that region, and cross-checks it with the zone explorer
at the bound itself and just below and just above it.  The bound is derived
from the model, not assumed; the table shows that it equals
``T_prop + T_chunk + T_flight`` at every size.

Assumptions (all stated here; change them and rerun):

* **KV bytes per token: 70,272 B** — the KV-cache footprint of a DeepSeek-V3-style
  MLA model: 61 layers x (512 + 64) cached values x 2 bytes (bf16).  A GQA
  70B-class model (80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes =
  327,680 B/token) needs about 4.7x more, which only makes the holds longer.
* **Chunk size: 8,192 tokens** (the chunked-prefill size).  Each chunk is one
  synchronous batched RDMA write call covering all layers (SGLang's PD
  transfer), so with chunked prefill a write call carries at most one chunk's
  KV, and a longer context means *more* chunks.  With chunked prefill off
  (scenario ``unchunked``) one write call carries the whole context, and a
  longer context means a *larger* write call.
* **T_flight** (one write call on the wire): the Mooncake transfer timeout of
  that call, 30 s + 1 s per GiB, rounded up to the millisecond — the call
  returns by then at the latest.  (Writes were seen to continue after the
  engine returned its timeout error; no hold covers those.)
* **T_chunk** (remaining chunks): the conservative reading of the upstream
  bound's t_remaining_chunks — the abort reaches prefill right after the first
  chunk was posted and every remaining chunk had been committed, prefill
  starting one every 0.5 s: ``T_chunk = (chunks - 1) x 0.5 s``.
* **T_prop** (abort propagation, decode to prefill): fixed at 1 s.

The flagship spec's ranges (T_flight up to 10 s, T_hold up to 40 s) are too
narrow for these values, so the script checks a variant of its text with wider
``param`` lines; the flagship file is not changed.
"""

from __future__ import annotations

import csv
import io
import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

from checker.api import check
from checker.language import load_text
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.smt.poly import Lin
from checker.smt.synth import explore_parametric, safe_region

SPEC = Path("spec") / "sglang" / "deferred_release.kvr"
CSV = Path("paper") / "data" / "context_length.csv"

GIB = 2**30
KV_BYTES_PER_TOKEN = 70_272
CHUNK_TOKENS = 8_192
T_PROP = Fraction(1)
PER_CHUNK = Fraction(1, 2)
MOONCAKE_BASE = Fraction(30)
MOONCAKE_PER_GIB = Fraction(1)
EPS = Fraction(1, 100)  # "just below" / "just above" the bound, seconds
DEFAULT_HOLD = Fraction(30)  # SGLang's default deferred-release timeout

SIZES = {"8k": 8_192, "32k": 32_768, "128k": 131_072, "512k": 524_288, "1M": 1_048_576}
SCENARIOS = ("chunked", "unchunked")

WIDE_PARAMS = {
    "T_prop": "param T_prop   in [0, 10000] = 2",
    "T_chunk": "param T_chunk  in [0, 10000] = 2",
    "T_flight": "param T_flight in (0, 10000] = 3",
    "T_hold": "param T_hold   in [0, 100000] = 8",
}


@dataclass
class Row:
    """One context length under one scenario."""

    scenario: str
    context: str
    tokens: int
    chunks: int
    write_gib: float
    T_prop: Fraction
    T_chunk: Fraction
    T_flight: Fraction
    sum: Fraction  # T_prop + T_chunk + T_flight
    bound: Fraction  # the minimal hold read off the synthesized region
    strict: bool  # safe iff T_hold > bound (True) or >= bound (False)
    below: str  # zone-explorer verdict at bound - EPS
    at: str  # ... at the bound
    above: str  # ... at bound + EPS
    synth_seconds: float

    @property
    def default_hold_safe(self) -> bool:
        """Whether SGLang's default 30 s hold covers the window."""
        return self.bound < DEFAULT_HOLD if self.strict else self.bound <= DEFAULT_HOLD


def wide_spec(root: Path) -> ir.Spec:
    """deferred_release.kvr with its ``param`` lines widened (text substitution)."""
    text = (root / SPEC).read_text(encoding="utf-8")
    for name, line in WIDE_PARAMS.items():
        text, n = re.subn(rf"^param {name}\b.*$", line, text, flags=re.MULTILINE)
        if n != 1:
            raise RuntimeError(f"{SPEC}: expected one `param {name}` line, found {n}")
    return load_text(text, f"{SPEC} (wide ranges)")


def ceil_ms(x: Fraction) -> Fraction:
    return Fraction(math.ceil(x * 1000), 1000)


def parameters(tokens: int, scenario: str) -> tuple[int, int, dict[str, Fraction]]:
    """(chunks, bytes per write call, fixed parameter values) for a context length."""
    if scenario == "chunked":
        chunks = -(-tokens // CHUNK_TOKENS)
        call_tokens = min(tokens, CHUNK_TOKENS)
    elif scenario == "unchunked":
        chunks, call_tokens = 1, tokens
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
    call_bytes = call_tokens * KV_BYTES_PER_TOKEN
    t_flight = ceil_ms(MOONCAKE_BASE + MOONCAKE_PER_GIB * Fraction(call_bytes, GIB))
    t_chunk = (chunks - 1) * PER_CHUNK
    return chunks, call_bytes, {"T_prop": T_PROP, "T_chunk": t_chunk, "T_flight": t_flight}


def hold_bound(cnf: Sequence[Sequence[Lin]]) -> tuple[Fraction, bool]:
    """Read ``T_hold > b`` (or ``>=``) off a synthesized CNF region over T_hold."""
    if len(cnf) != 1 or len(cnf[0]) != 1:
        raise RuntimeError(f"expected a single bound on T_hold, got {cnf!r}")
    c = cnf[0][0]
    coefs = dict(c.coefs)
    if set(coefs) != {"p:T_hold"} or coefs["p:T_hold"] >= 0:
        raise RuntimeError(f"expected a lower bound on T_hold, got {c!r}")
    # a*T_hold + const (<|<=) 0 with a < 0  <=>  T_hold (>|>=) const / -a
    a = coefs["p:T_hold"]
    return c.const / -a, bool(c.strict)


def study_one(spec: ir.Spec, scenario: str, context: str) -> Row:
    tokens = SIZES[context]
    chunks, call_bytes, values = parameters(tokens, scenario)
    start = time.monotonic()
    result = explore_parametric(SpecModel(spec, values), ["T_hold"])
    seconds = time.monotonic() - start
    if not result.complete:
        raise RuntimeError(f"{scenario} {context}: synthesis inconclusive ({result.limit})")
    bound, strict = hold_bound(safe_region(result))

    def verdict(hold: Fraction) -> str:
        return check(spec, {**values, "T_hold": hold}, timestamps=False).verdict

    return Row(scenario, context, tokens, chunks, round(call_bytes / GIB, 3),
               values["T_prop"], values["T_chunk"], values["T_flight"],
               sum(values.values(), Fraction(0)), bound, strict,
               verdict(bound - EPS), verdict(bound), verdict(bound + EPS), round(seconds, 1))


def study(root: Path, contexts: list[str] | None = None,
          scenarios: tuple[str, ...] = SCENARIOS, progress: bool = False) -> list[Row]:
    """The study's rows (every context length by default)."""
    spec = wide_spec(root)
    rows = []
    for scenario in scenarios:
        for context in contexts or list(SIZES):
            row = study_one(spec, scenario, context)
            if progress:
                print(f"  {scenario:9} {context:>4}: T_hold > {fmt(row.bound)}"
                      f"  ({row.synth_seconds} s)", file=sys.stderr)
            rows.append(row)
    return rows


def fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):.3f}".rstrip("0")


COLUMNS = ["scenario", "context", "tokens", "chunks", "write_gib", "T_prop", "T_chunk",
           "T_flight", "sum", "bound", "strict", "below", "at", "above", "default_hold_safe"]
"""The CSV's columns (no run times, so that reruns reproduce the file exactly)."""


def cells(row: Row) -> list[str]:
    d = {**asdict(row), "default_hold_safe": row.default_hold_safe}
    return [fmt(v) if isinstance(v, Fraction) else str(v) for v in (d[c] for c in COLUMNS)]


def csv_text(rows: list[Row]) -> str:
    """The study's CSV (``paper/data/context_length.csv``)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(cells(r) for r in rows)
    return out.getvalue()


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a committed study CSV."""
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
