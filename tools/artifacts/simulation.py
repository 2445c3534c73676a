"""The simulation study: how likely is the flagship's leak under realistic delays, as
the hold grows?

``paper/data/simulation.json`` (part ``measurements``) holds the estimates;
``paper/generated/fig-simulation.tex`` (the paper's plot) and
``paper/generated/fig-simulation.svg`` (the README's) are drawn from it (part
``paper``).

The model is the flagship (``spec/sglang/deferred_release.kvr``, with the wider
parameter ranges of the context-length study, :func:`tools.artifacts.study.wide_spec`)
at the parameters of an 8,192-token DeepSeek-V3 chunk written in one call
(:mod:`tools.artifacts.study`): ``T_prop`` = 1 s, ``T_chunk`` = 0 (one call per
chunk), ``T_flight`` = the errored call's bound, 30 s + 1 ns per byte.  Random runs
follow ``kvrace simulate``'s semantics (:mod:`checker.simulate.engine`) with one
user distribution, for the time a write call's data spends on the wire (the clock
bounded by ``T_flight``):

* **typical calls** (share ``1 - ERRORED_SHARE``): the chunk's bytes at a bandwidth
  drawn uniformly between the study's slow and fast links (12 and 50 GB/s): a
  flight time uniform between bytes/50 GB/s and bytes/12 GB/s (12 to 48 ms);
* **errored calls** (share :data:`ERRORED_SHARE`, an assumption: 1 %): a heavy tail,
  lognormal with median 1 s and sigma 2, truncated at ``T_flight`` — the writes of a
  call that errs may land at any time until Mooncake gives up on it.

Every other delay follows the default rule (abort propagation uniform within
``T_prop``; events without an upper bound, such as the abort itself and the release
after ``T_hold``, exponential with rate 1/s).  The numbers are an illustration of the
method under stated assumptions, not a measurement of SGLang.
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from checker import api
from checker.model.compiled import SpecModel
from checker.simulate import Runner, SimConfig, parse_distribution, simulate
from tools.artifacts import study

DATA = "paper/data/simulation.json"
FIG_TEX = "paper/generated/fig-simulation.tex"
FIG_SVG = "paper/generated/fig-simulation.svg"
RESULTS_TEX = "paper/generated/simulation-results.tex"
HOLDS = ("0", "0.25", "0.5", "1", "1.5", "2", "3", "5", "7.5", "10", "15", "20", "25", "30",
         "31", "32", "35", "40")
RUNS = 10_000
SEED = 0
ERRORED_SHARE = 0.01
TAIL = "lognormal(0, 2)"
CONFIDENCE = 0.95
DEFAULT_HOLD = "30"


def scenario(root: Path) -> tuple[Any, dict[str, Fraction], str]:
    """The spec, its parameter values (``T_hold`` aside) and the flight-time
    distribution as ``--delay`` text."""
    spec = study.wide_spec(root)
    _, calls, call_bytes = study.layout(study.CHUNK_TOKENS, "chunked")
    values = study.parameters(calls, call_bytes, "errored")
    fast = call_bytes / study.LINK_FAST
    slow = call_bytes / study.LINK_SLOW
    typical = 1 - ERRORED_SHARE
    dist = (f"mixture({typical:g}*uniform({fast:.6f}, {slow:.6f}),"
            f" {ERRORED_SHARE:g}*{TAIL})")
    return spec, values, dist


def measure(root: Path, jobs: int = 2) -> dict[str, Any]:
    """The estimates at every hold of :data:`HOLDS` (about a minute on 2 cores)."""
    spec, values, dist = scenario(root)
    cfg = SimConfig(delays=(("T_flight", parse_distribution(dist)),))
    rows = []
    for hold in HOLDS:
        model = SpecModel(spec, {**values, "T_hold": Fraction(hold)})
        with Runner(model, cfg, jobs) as runner:
            res = simulate(runner, RUNS, SEED, CONFIDENCE, keep=0)
        rows.append({"T_hold": hold, "runs": res.runs, "violations": res.violations,
                     "p": res.p, "lo": res.lo, "hi": res.hi})
    threshold = api.safe_threshold(spec, "T_hold", values)
    return {
        "model": spec.name, "seed": SEED, "runs": RUNS, "confidence": CONFIDENCE,
        "params": {k: study.fmt(v) for k, v in values.items()},
        "delay": f"T_flight={dist}", "errored_share": ERRORED_SHARE,
        "safe_threshold": threshold.text("T_hold") if threshold else None,
        "safe_threshold_value": float(threshold.value) if threshold else None,
        "rows": rows,
    }


def data_files(root: Path) -> dict[str, bytes]:
    """``paper/data/simulation.json``, measured afresh."""
    return {DATA: (json.dumps(measure(root), indent=2) + "\n").encode()}


def _fig_tex(doc: dict[str, Any]) -> str:
    rows = doc["rows"]

    def coords(key: str) -> str:
        # A log axis cannot show 0: an estimate of 0 is drawn at the axis floor.
        return " ".join(f"({r['T_hold']},{max(r[key], 1e-5):.6g})" for r in rows)

    lines = [
        r"\begin{tikzpicture}",
        r"\begin{semilogyaxis}[width=0.92\linewidth, height=6.5cm,",
        r"  xlabel={$T_{\mathit{hold}}$ (s)}, ylabel={P(leak) per run},",
        r"  ymin=1e-5, ymax=1, xmin=0, xmax=40, grid=major, legend cell align=left,",
        r"  legend style={font=\footnotesize, at={(0.5,-0.22)}, anchor=north, legend columns=2}]",
        r"\addplot[name path=hi, draw=none, forget plot] coordinates {" + coords("hi") + "};",
        r"\addplot[name path=lo, draw=none, forget plot] coordinates {" + coords("lo") + "};",
        r"\addplot[blue!25] fill between[of=hi and lo];",
        f"\\addlegendentry{{{doc['confidence']:.0%} Clopper--Pearson interval}}".replace(
            "%", r"\,\%"),
        r"\addplot[thick, blue!70!black, mark=*, mark size=1.2pt] coordinates {"
        + coords("p") + "};",
        r"\addlegendentry{estimated P(leak)}",
    ]
    if doc["safe_threshold_value"] is not None:
        x = doc["safe_threshold_value"]
        lines += [
            f"\\addplot[thick, dashed, red!70!black] coordinates {{({x:.6g},1e-5) ({x:.6g},1)}};",
            f"\\addlegendentry{{exact safe bound (synth): $T_{{\\mathit{{hold}}}} > {x:.6g}$}}",
        ]
    lines += [
        f"\\addplot[thick, densely dotted, black] coordinates {{({DEFAULT_HOLD},1e-5)"
        f" ({DEFAULT_HOLD},1)}};",
        r"\addlegendentry{SGLang's default timeout (30\,s)}",
        r"\end{semilogyaxis}",
        r"\end{tikzpicture}",
    ]
    return "\n".join(lines) + "\n"


def _fig_svg(doc: dict[str, Any], path: Path) -> bytes:
    from checker.simulate.plot import Threshold, sweep_plot
    from checker.simulate.runner import SimResult

    results = []
    for r in doc["rows"]:
        res = SimResult(doc["model"], {}, SimConfig(), doc["seed"], doc["confidence"],
                        runs=r["runs"], violations=r["violations"], lo=r["lo"], hi=r["hi"])
        results.append(res)
    threshold = None
    if doc["safe_threshold_value"] is not None:
        threshold = Threshold(Fraction(str(doc["safe_threshold_value"])), True, True)
    sweep_plot(str(path), "T_hold", [Fraction(r["T_hold"]) for r in doc["rows"]], results,
               threshold, f"{doc['model']}: {doc['runs']} runs per point, realistic delays",
               logy=True)
    return path.read_bytes()


def data_stamp(data: bytes) -> bytes:
    """The comment that ties the SVG plot to the data it was drawn from."""
    return b"<!-- kvrace: drawn from " + DATA.encode() + b", sha256 " + \
        hashlib.sha256(data).hexdigest().encode() + b" -->"


def same_plot(old: bytes, new: bytes) -> bool:
    """Whether two SVG plots were drawn from the same data (their bytes may differ
    between matplotlib versions)."""
    def stamp(svg: bytes) -> bytes | None:
        for line in svg.splitlines()[:3]:
            if line.startswith(b"<!-- kvrace: drawn from"):
                return line
        return None

    return stamp(old) is not None and stamp(old) == stamp(new)


def _results_tex(doc: dict[str, Any]) -> str:
    """The paragraph of results the paper's section inputs."""
    rows = {r["T_hold"]: r for r in doc["rows"]}

    def pct(hold: str) -> str:
        r = rows[hold]
        if r["violations"] == 0:
            runs = f"{r['runs']:,}".replace(",", "{,}")
            return f"none of {runs} runs (at most {r['hi'] * 100:.2g}\\,\\%)"
        return f"{r['p'] * 100:.2g}\\,\\% [{r['lo'] * 100:.2g}, {r['hi'] * 100:.2g}]"

    hold = r"$T_{\mathit{hold}}$"
    lines = [
        f"Without a hold, {pct('0')} of the runs leak.  Half a second of hold leaves"
        f" {pct('0.5')}, one second {pct('1')}: the typical writes and the abort's"
        " propagation are covered.  What is left is the heavy tail of errored calls:"
        f" {pct('10')} at 10\\,s, {pct('25')} at 25\\,s, and at SGLang's default of"
        f" 30\\,s {pct(DEFAULT_HOLD)}."
    ]
    first_zero = next((r["T_hold"] for r in doc["rows"] if r["violations"] == 0), None)
    if first_zero is not None and doc["safe_threshold_value"] is not None:
        bound = f"{doc['safe_threshold_value']:g}"
        lines.append(
            f"No leak is sampled from {hold} = {first_zero}\\,s on, although the exact safe"
            f" bound synthesized for these parameters is {hold} > {bound}\\,s: a leak"
            f" beyond {first_zero}\\,s needs an errored call whose data lands in the last"
            " seconds before its deadline, rarer than this sample resolves.")
    return "\n".join(lines) + "\n"


def figure_files(root: Path) -> dict[str, bytes]:
    """The paper's and the README's plots, from ``paper/data/simulation.json``."""
    import tempfile

    raw = (root / DATA).read_bytes()
    doc = json.loads(raw.decode("utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        svg = _fig_svg(doc, Path(tmp) / "fig.svg")
    head, _, rest = svg.partition(b"\n")
    svg = head + b"\n" + data_stamp(raw) + b"\n" + rest
    return {FIG_TEX: _fig_tex(doc).encode(), FIG_SVG: svg,
            RESULTS_TEX: _results_tex(doc).encode()}
