"""How long must decode hold an aborted request's KV slot, as the context grows?

``python -m tools.artifacts --only measurements`` writes its table to
``paper/data/context_length.csv``; the paper and ``spec/README.md`` show it.

The window a hold must cover is ``T_prop + T_chunk + T_flight``
(``spec/sglang/deferred_release.kvr``): the abort's propagation, the rest of
the *current* chunk's sequential write calls (once prefill marks a room
Failed, ``add_transfer_request`` and the transfer worker skip every further
chunk), and one call on the wire.  Each row fixes a transfer layout and a
context length and gives two instances of that window:

* **typical**: every call moves its bytes at the link's bandwidth;
* **errored**: one call of the current chunk runs until Mooncake gives up on
  it (``batchTransferSync``, Mooncake ``transfer_engine_py.cpp``: 30 s + 1 ns
  per byte; the retries of a slice share that one deadline), the worst a call
  can take before it returns.  ``_send_kvcache_generic`` (``mooncake/conn.py``)
  returns after the *first* failed index batch, so an errored chunk costs one
  deadline, not one per batch: the worst case is the chunk's other calls at
  the typical speed, then the errored one.  Returning -1 does not cancel the
  posted writes; no hold covers a write that outlives its call's return.

For each instance the script synthesizes the safe region over ``T_hold``
alone with the other three parameters fixed (parametric zone exploration,
EFsynth), reads the minimal safe hold off it, and cross-checks it with the
zone explorer just below it, at it and just above it.  The bound is derived
from the model, not assumed; the table shows that it equals the sum of the
three delays in every row, and whether SGLang's default 30 s release timeout
covers it.

Inputs (all stated here, with their sources; change them and rerun):

* KV bytes per token: DeepSeek-V3's MLA cache, derived from its model
  configuration (``config.json`` of deepseek-ai/DeepSeek-V3: 61 layers,
  ``kv_lora_rank`` 512 + ``qk_rope_head_dim`` 64 cached values per layer,
  bf16) = 70,272 B; an 8,192-token chunk is then about 0.58 GB.
* Chunk size: 8,192 tokens, the chunked-prefill size; each chunk is one
  transfer (``disaggregation/prefill.py`` sends a chunk per chunked-prefill
  step).  Layout ``unchunked`` (chunked prefill off) sends the whole context
  as one chunk.
* Calls per chunk: one on Mooncake's default path
  (``SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES`` unset, ``environ.py``).
  The batches count *page* indices: layout ``split`` sets it to 1,024 at page
  size 1 (an assumption), so an 8,192-token chunk becomes 8 sequential calls;
  layout ``split_p64`` is the same setting at page size 64 (an assumption),
  where 1,024 pages hold 65,536 tokens and a chunk is one call.
* Link bandwidth: 12 to 50 GB/s, the line rate of one 100 to 400 Gb/s RDMA
  NIC; the typical instance uses the slow end (the hold must cover it), the
  fast end is reported for scale.
* ``T_prop``: 1 s (an assumption: the ABORT message from decode to prefill).
* The 12 GB/s of the typical instance is an assumption (the slow end of the
  line rates above), as are the page sizes.
* The default hold: SGLang's deferred-release timeout, 30 s
  (``SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE`` timeout, ``environ.py``).

Times are rounded up to the millisecond.  The flagship spec's ranges are too
narrow for these values, so the script checks a variant of its text with
wider ``param`` lines; the flagship file is not changed.
"""

from __future__ import annotations

import csv
import io
import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from checker.api import check
from checker.language import load_text
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.smt.lin import Lin
from checker.smt.synth import explore_parametric, safe_region

SPEC = Path("spec") / "sglang" / "deferred_release.kvr"
CSV = Path("paper") / "data" / "context_length.csv"

# DeepSeek-V3 config.json: num_hidden_layers, kv_lora_rank + qk_rope_head_dim, bf16 bytes.
MLA_LAYERS = 61
MLA_VALUES_PER_LAYER = 512 + 64
BF16_BYTES = 2
KV_BYTES_PER_TOKEN = MLA_LAYERS * MLA_VALUES_PER_LAYER * BF16_BYTES
CHUNK_TOKENS = 8_192  # chunked-prefill size
SPLIT_INDICES = 1_024  # SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES in the split layouts
PAGE_SIZES = {"split": 1, "split_p64": 64}  # tokens per page index (assumed page sizes)
GB = 10**9
LINK_SLOW = 12 * GB  # bytes/s: a 100 Gb/s RDMA NIC (12.5 GB/s line rate), rounded down
LINK_FAST = 50 * GB  # bytes/s: a 400 Gb/s RDMA NIC
MOONCAKE_BASE = Fraction(30)  # batchTransferSync timeout: 30 s ...
MOONCAKE_PER_BYTE = Fraction(1, 10**9)  # ... plus 1 ns per byte
T_PROP = Fraction(1)
DEFAULT_HOLD = Fraction(30)  # SGLang's default deferred-release timeout
EPS = Fraction(1, 1000)  # "just below" / "just above" the bound, seconds

SIZES = {"8k": 8_192, "32k": 32_768, "128k": 131_072, "512k": 524_288, "1M": 1_048_576}
LAYOUTS = ("chunked", "split", "split_p64", "unchunked")
CASES = ("typical", "errored")

WIDE_PARAMS = {
    "T_prop": "param T_prop   in [0, 10000] = 2",
    "T_chunk": "param T_chunk  in [0, 10000] = 2",
    "T_flight": "param T_flight in (0, 10000] = 3",
    "T_hold": "param T_hold   in [0, 100000] = 8",
}


@dataclass(frozen=True)
class Window:
    """One instance of the window (typical or errored) and what kvrace says of it."""

    T_chunk: Fraction
    T_flight: Fraction
    bound: Fraction  # the minimal hold read off the synthesized region
    strict: bool  # safe iff T_hold > bound (True) or >= bound (False)
    below: str  # zone-explorer verdict at bound - EPS
    at: str  # ... at the bound
    above: str  # ... at bound + EPS
    synth_seconds: float

    @property
    def sum(self) -> Fraction:
        return T_PROP + self.T_chunk + self.T_flight

    @property
    def default_hold_safe(self) -> bool:
        """Whether SGLang's default 30 s hold covers the window."""
        return self.bound < DEFAULT_HOLD if self.strict else self.bound <= DEFAULT_HOLD


@dataclass(frozen=True)
class Row:
    """One context length under one transfer layout."""

    layout: str
    context: str
    tokens: int
    chunk_tokens: int  # tokens of the current chunk
    calls: int  # sequential write calls of that chunk
    call_bytes: int
    typical: Window
    errored: Window

    @property
    def chunk_gb(self) -> Fraction:
        return Fraction(self.chunk_tokens * KV_BYTES_PER_TOKEN, GB)

    @property
    def chunk_ms_fast(self) -> Fraction:
        """The whole chunk at the fast end of the link (for scale)."""
        return ceil_ms(Fraction(self.chunk_tokens * KV_BYTES_PER_TOKEN, LINK_FAST)) * 1000


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


def layout(tokens: int, name: str) -> tuple[int, int, int]:
    """(tokens of the current chunk, calls per chunk, bytes per call)."""
    if name == "unchunked":
        chunk = tokens
    elif name == "chunked" or name in PAGE_SIZES:
        chunk = min(tokens, CHUNK_TOKENS)
    else:
        raise ValueError(f"unknown layout {name!r}")
    per_call = SPLIT_INDICES * PAGE_SIZES[name] if name in PAGE_SIZES else chunk
    calls = -(-chunk // per_call)
    return chunk, calls, min(chunk, per_call) * KV_BYTES_PER_TOKEN


def call_time(call_bytes: int, case: str) -> Fraction:
    """How long one call may take: at the slow link's bandwidth, or until Mooncake's timeout."""
    if case == "typical":
        return ceil_ms(Fraction(call_bytes, LINK_SLOW))
    if case == "errored":
        return ceil_ms(MOONCAKE_BASE + MOONCAKE_PER_BYTE * call_bytes)
    raise ValueError(f"unknown case {case!r}")


def parameters(calls: int, call_bytes: int, case: str) -> dict[str, Fraction]:
    """T_prop, T_chunk (the rest of the current chunk's calls) and T_flight (one call).

    An errored chunk costs one deadline: the send returns after its first failed
    batch, so the chunk's other calls run at the typical speed."""
    t = call_time(call_bytes, case)
    return {"T_prop": T_PROP, "T_chunk": (calls - 1) * call_time(call_bytes, "typical"),
            "T_flight": t}


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


def window(spec: ir.Spec, values: dict[str, Fraction]) -> Window:
    """Synthesize the minimal hold for fixed delays and check around it."""
    start = time.monotonic()
    result = explore_parametric(SpecModel(spec, values), ["T_hold"])
    seconds = time.monotonic() - start
    if not result.complete:
        raise RuntimeError(f"{values}: synthesis inconclusive ({result.limit})")
    bound, strict = hold_bound(safe_region(result))

    def verdict(hold: Fraction) -> str:
        return check(spec, {**values, "T_hold": hold}, timestamps=False).verdict

    return Window(values["T_chunk"], values["T_flight"], bound, strict, verdict(bound - EPS),
                  verdict(bound), verdict(bound + EPS), round(seconds, 1))


def study(root: Path, contexts: list[str] | None = None,
          layouts: tuple[str, ...] = LAYOUTS, progress: bool = False) -> list[Row]:
    """The study's rows (every context length and layout by default)."""
    spec = wide_spec(root)
    cache: dict[tuple[Fraction, ...], Window] = {}
    rows = []
    for name in layouts:
        for context in contexts or list(SIZES):
            tokens = SIZES[context]
            chunk, calls, call_bytes = layout(tokens, name)
            found = []
            for case in CASES:
                values = parameters(calls, call_bytes, case)
                key = tuple(values.values())
                if key not in cache:  # equal delays, equal answer: synthesize once
                    cache[key] = window(spec, values)
                found.append(cache[key])
            row = Row(name, context, tokens, chunk, calls, call_bytes, *found)
            if progress:
                print(f"  {name:9} {context:>4}: typical T_hold > {fmt(row.typical.bound)},"
                      f" errored T_hold > {fmt(row.errored.bound)}", file=sys.stderr)
            rows.append(row)
    return rows


def fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):.3f}".rstrip("0")


COLUMNS = ["layout", "context", "tokens", "chunk_tokens", "calls", "chunk_gb", "chunk_ms_fast",
           "T_prop", *(f"{case}_{k}" for case in CASES
                       for k in ("T_chunk", "T_flight", "sum", "bound", "strict", "below", "at",
                                 "above", "default_hold_safe"))]
"""The CSV's columns (no run times, so that reruns reproduce the file exactly)."""


def cells(row: Row) -> list[str]:
    d: dict[str, object] = {
        "layout": row.layout, "context": row.context, "tokens": row.tokens,
        "chunk_tokens": row.chunk_tokens, "calls": row.calls,
        "chunk_gb": f"{float(row.chunk_gb):.2f}", "chunk_ms_fast": row.chunk_ms_fast,
        "T_prop": T_PROP,
    }
    for case in CASES:
        w: Window = getattr(row, case)
        for k in ("T_chunk", "T_flight", "sum", "bound", "strict", "below", "at", "above",
                  "default_hold_safe"):
            d[f"{case}_{k}"] = getattr(w, k)
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


def typical_cover_tokens() -> int:
    """The largest single call (in tokens) whose typical window the default hold covers."""
    budget = DEFAULT_HOLD - T_PROP  # seconds left for the call on the slow link
    return math.floor(budget * LINK_SLOW / KV_BYTES_PER_TOKEN)


def readme_lines(rows: Sequence[dict[str, str]]) -> list[str]:
    """The study as a Markdown section (for ``spec/README.md``), from its CSV rows."""
    chunk_bytes = CHUNK_TOKENS * KV_BYTES_PER_TOKEN
    slow_ms = fmt(ceil_ms(Fraction(chunk_bytes, LINK_SLOW)) * 1000)
    fast_ms = fmt(ceil_ms(Fraction(chunk_bytes, LINK_FAST)) * 1000)
    lines = [
        "## How long a hold must be, by context length",
        "",
        "From `paper/data/context_length.csv` (`tools/artifacts/study.py`, which states",
        "every input and its source).  The window is T_prop + T_chunk + T_flight of",
        "`deferred_release.kvr`, with T_chunk the rest of the *current* chunk's calls; kvrace",
        "synthesizes the minimal hold for each instance and checks it just below, at and",
        f"just above it.  *Typical*: each call at {LINK_SLOW // GB} GB/s (an"
        f" {CHUNK_TOKENS:,}-token DeepSeek-V3",
        f"chunk is {chunk_bytes / GB:.2f} GB: {fast_ms}-{slow_ms} ms at"
        f" {LINK_FAST // GB}-{LINK_SLOW // GB} GB/s).  *Errored*: each call",
        f"runs to Mooncake's `batchTransferSync` timeout, {fmt(MOONCAKE_BASE)} s +"
        f" {fmt(MOONCAKE_PER_BYTE * 10**9)} ns per byte",
        f"(about {float(MOONCAKE_PER_BYTE * 2**30):.2f} s per GiB); the send returns after the"
        " first failed batch",
        "(`_send_kvcache_generic`), so an errored chunk costs one deadline, its other calls",
        "running at the typical speed.  Layouts: `chunked`, one call per chunk (Mooncake's",
        "default); `split`, SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES ="
        f" {SPLIT_INDICES:,} page indices at",
        f"page size {PAGE_SIZES['split']}; `split_p64`, the same at page size"
        f" {PAGE_SIZES['split_p64']} (one call per chunk); `unchunked`,",
        f"chunked prefill off.  T_prop = {fmt(T_PROP)} s, 12 GB/s and the page sizes are"
        " assumptions.",
        "",
        "| layout | context | calls per chunk | chunk GB | typical write (s) | hold needed |"
        " errored chunk (s) | hold needed | 30 s default covers |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        op = {case: ">" if r[f"{case}_strict"] == "True" else ">=" for case in CASES}
        typical = Fraction(r["typical_T_chunk"]) + Fraction(r["typical_T_flight"])
        errored = Fraction(r["errored_T_chunk"]) + Fraction(r["errored_T_flight"])
        covers = [case for case in CASES if r[f"{case}_default_hold_safe"] == "True"]
        lines.append(
            f"| {r['layout']} | {r['context']} | {r['calls']} | {r['chunk_gb']} | {fmt(typical)}"
            f" | T_hold {op['typical']} {r['typical_bound']} | {fmt(errored)}"
            f" | T_hold {op['errored']} {r['errored_bound']} | {', '.join(covers) or 'neither'} |")
    cover = typical_cover_tokens()
    lines += [
        "",
        f"The default {fmt(DEFAULT_HOLD)} s hold covers the typical window of any call up to"
        f" {cover / 2**20:.1f}M tokens",
        f"({cover * KV_BYTES_PER_TOKEN / GB:.0f} GB at {LINK_SLOW // GB} GB/s) and the errored"
        " window of none: Mooncake's budget for",
        f"one call alone is at least {fmt(MOONCAKE_BASE)} s.  No hold covers a write that"
        " lands after its call returned -1.",
    ]
    return lines
