"""The files the paper includes, written to ``paper/generated/``.

Everything here is computed from the measurements in ``paper/data/`` (see
:mod:`tools.artifacts.measurements`) and from short kvrace runs; nothing is
typed by hand.  The LaTeX sources in ``paper/`` include:

* ``numbers.tex``: ``\\kv{key}`` values (verdicts, counts, bounds, times);
* ``table-*.tex``: the tables;
* ``fig-context.tex``: the context-length plot (pgfplots, data inline);
* ``table-lease.tex``: vLLM's lease against context length (``lease_study.csv``);
* ``study-NAME.tex``: each spec's result paragraph and counterexample figure;
* ``spec-NAME.kvr``: each spec without its header comment, for listings;
* ``*.dot``: diagrams that are not counterexamples at the defaults (the
  flagship just below its bound); ``paper/build.sh`` renders them with the
  counterexamples' ``.dot`` files.

``sources_digest`` fingerprints everything the PDF is built from; ``paper/build.sh``
stamps it into the PDF so that a test can tell a stale ``paper.pdf``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from checker import api
from checker.present import dot as render
from tools.artifacts import study

DATA = Path("paper") / "data"
OUT = "paper/generated"
BOUNDARY_HOLD = "7"
TALL_EVENTS = 10
"""Counterexamples longer than this get a taller figure (one row per event)."""
PAGE_EVENTS = 15
"""Counterexamples longer than this get a page of their own."""


# ----------------------------------------------------------------------------- LaTeX text


_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
            "^": r"\textasciicircum{}", "→": r"$\rightarrow$", "—": "---", "–": "--",
            "≥": r"$\geq$", "≤": r"$\leq$", "×": r"$\times$"}


def tex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def code(text: str) -> str:
    """``text`` in typewriter, escaped, breakable after underscores."""
    return r"\code{" + tex(text).replace(r"\_", r"\_\allowbreak{}") + "}"


_NAME = re.compile(r"\b([A-Za-z])_([A-Za-z][A-Za-z0-9]*)\b")


def math(expr: str) -> str:
    """A constraint such as ``T_hold > T_prop + T_flight`` as LaTeX math."""
    if expr in ("true", "false"):
        return rf"\emph{{{expr}}}"
    out = expr.replace(">=", r"\geq").replace("<=", r"\leq")
    out = _NAME.sub(lambda m: f"{m.group(1)}_{{\\mathit{{{m.group(2)}}}}}", out)
    out = out.replace(" and ", r" \wedge ").replace(" or ", r" \vee ")
    out = re.sub(r"\(([^()]*)\)", r"(\1)", out)
    return f"${out}$"


def point(values: Mapping[str, str]) -> str:
    """Parameter values as LaTeX math: ``T_hold=7`` and so on."""
    return ", ".join(math(f"{k} = {_num(v)}") for k, v in values.items())


def _num(v: str) -> str:
    if "/" in v:
        n, d = v.split("/")
        frac = float(int(n)) / int(d)
        return f"{frac:g}" if len(f"{frac:g}") <= 8 else v
    return v


def thousands(n: int) -> str:
    """``12345`` as ``12{,}345``."""
    return f"{n:,}".replace(",", "{,}")


# ----------------------------------------------------------------------------- numbers


def _numbers(specs: Mapping[str, Any], synth: Mapping[str, Any], bench: Mapping[str, Any],
             context: Sequence[Mapping[str, str]]) -> dict[str, str]:
    kv: dict[str, str] = {}
    for row in specs["specs"]:
        s = row["stem"]
        kv[f"{s}.verdict"] = row["verdict"]
        kv[f"{s}.property"] = code(row["property"] or "")
        kv[f"{s}.message"] = tex(row["message"] or "")
        kv[f"{s}.states"] = thousands(row["states"])
        kv[f"{s}.zones"] = thousands(row["zones"])
        kv[f"{s}.transitions"] = thousands(row["transitions"])
        kv[f"{s}.events"] = str(row["events"] or 0)
        kv[f"{s}.params"] = point(row["params"])
        kv[f"{s}.lines"] = str(row["lines"])
    for row in synth["synth"]:
        s = row["stem"]
        kv[f"{s}.region"] = math(row["region"]) if row["complete"] else "inconclusive"
        kv[f"{s}.synth.states"] = thousands(row["symbolic_states"])
        kv[f"{s}.synth.queries"] = thousands(row["queries"])
        kv[f"{s}.synth.seconds"] = f"{row['seconds']:.1f}"
        kv[f"{s}.synth.states.nomerge"] = thousands(row["no_merge"]["symbolic_states"])
    rows = synth["synth"]
    kv["synth.states"] = thousands(sum(r["symbolic_states"] for r in rows))
    kv["synth.states.nomerge"] = thousands(sum(r["no_merge"]["symbolic_states"] for r in rows))
    kv["synth.seconds"] = f"{sum(r['seconds'] for r in rows):.1f}"
    kv["synth.seconds.nomerge"] = f"{sum(r['no_merge']['seconds'] for r in rows):.1f}"
    deferred = next(r for r in specs["specs"] if r["stem"] == "deferred_release")["params"]
    window = sum((Fraction(deferred[k]) for k in ("T_prop", "T_chunk", "T_flight")), Fraction(0))
    kv["deferred_release.window"] = _num(str(window))
    for p in specs["boundary"]["points"]:
        kv[f"boundary.{p['T_hold']}.verdict"] = p["verdict"]
    ex = specs["boundary"]["explain"]
    kv["boundary.explain.hold"] = ex["T_hold"]
    kv["boundary.explain.region"] = math(ex["region"])
    for name, row in zip(("exact", "weak"), specs["prove"], strict=True):
        kv[f"prove.{name}.assumption"] = math(row["assumption"])
        kv[f"prove.{name}.status"] = row["status"]
        kv[f"prove.{name}.symbolic"] = thousands(row["symbolic_states"])
        kv[f"prove.{name}.seconds"] = f"{row['seconds']:.1f}"
        if row.get("counterexample"):
            kv[f"prove.{name}.witness"] = point(row["counterexample"])
        if row.get("boundary_counterexample"):
            kv[f"prove.{name}.witness"] = point(row["boundary_counterexample"])
        if "witness_verdict" in row:
            kv[f"prove.{name}.witness.verdict"] = row["witness_verdict"]
    for r in specs["ablation"]:
        flags = "".join("1" if r[k] else "0" for k in ("symmetry", "clock_reduction",
                                                         "deadlock"))
        kv[f"ablation.{r['spec']}.{flags}.zones"] = thousands(r["zones"])
        kv[f"ablation.{r['spec']}.{flags}.states"] = thousands(r["states"])
    runs = bench["runs"]
    for r in runs:
        key = f"bench.{r['requests']}.{r['slots']}.{r['chunks']}.{r['scale']}"
        kv[f"{key}.zones"] = thousands(r["zones"])
        kv[f"{key}.seconds"] = f"{r['seconds']:.2f}"
        kv[f"{key}.verdict"] = r["verdict"]
    for r in bench.get("fischer", []):
        key = f"fischer.{r['processes']}.{'sym' if r['symmetry'] else 'nosym'}"
        kv[f"{key}.zones"] = thousands(r["zones"])
        kv[f"{key}.seconds"] = f"{r['seconds']:.2f}"
    dbm_rows: dict[str, dict[str, Any]] = {}
    for r in bench.get("dbm", []):
        name = "flagship" if r.get("requests") else "fischer"
        dbm_rows[f"{name}.{r['dbm']}"] = r
        kv[f"dbm.{name}.{r['dbm']}.seconds"] = f"{r['seconds']:.2f}"
        kv[f"dbm.{name}.zones"] = thousands(r["zones"])
    for name in ("flagship", "fischer"):
        c, py = dbm_rows.get(f"{name}.c"), dbm_rows.get(f"{name}.python")
        if c is not None and py is not None and c["seconds"] > 0:
            kv[f"dbm.{name}.ratio"] = f"{py['seconds'] / c['seconds']:.1f}"
    m = bench["machine"]
    kv["machine.cpus"] = str(m["cpus"])
    kv["machine.python"] = m["python"]
    kv["machine.date"] = m["date"]
    kv["paper.date"] = m["date"]
    kv.update(_context_numbers(context))
    kv["specs.max_seconds"] = f"{max(r['seconds'] for r in specs['specs']):.2f}"
    kv["specs.max_events"] = str(max(r["events"] or 0 for r in specs["specs"]))
    from tools.artifacts import measurements

    kv["bench.cap"] = f"{measurements.BENCH_CAP:g}"
    kv["specs.count"] = str(len(specs["specs"]))
    kv["specs.violated"] = str(sum(r["verdict"] == "violated" for r in specs["specs"]))
    kv["specs.holds"] = str(sum(r["verdict"] == "holds" for r in specs["specs"]))
    return kv


def numbers_tex(kv: Mapping[str, str]) -> str:
    """``numbers.tex``: one ``\\kv@KEY`` definition per value."""
    lines = ["% Generated by `python -m tools.artifacts`; do not edit.",
             r"\makeatletter"]
    for k in sorted(kv):
        lines.append(rf"\expandafter\def\csname kv@{k}\endcsname{{{kv[k]}}}")
    lines.append(r"\makeatother")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- tables


def booktabs(columns: str, header: str, rows: Sequence[str], env: str = "tabular") -> str:
    """A booktabs table: column spec, header row (without ``\\\\``), body rows."""
    width = "{\\linewidth}" if env == "tabularx" else ""
    lines = [rf"\begin{{{env}}}{width}{{@{{}}{columns}@{{}}}}", r"\toprule", header + r" \\",
             r"\midrule", *rows, r"\bottomrule", rf"\end{{{env}}}"]
    return "\n".join(lines) + "\n"


def _verdict(v: str) -> str:
    return {"violated": r"\textcolor{red!70!black}{violated}",
            "holds": r"\textcolor{green!40!black}{holds}"}.get(v, v)


def table_specs(specs: Mapping[str, Any], synth: Mapping[str, Any]) -> str:
    """Every spec: verdict at its defaults, state space, synthesized safe region."""
    regions = {r["stem"]: r for r in synth["synth"]}
    rows = []
    for row in specs["specs"]:
        syn = regions[row["stem"]]
        region = math(syn["region"]) if syn["complete"] else "inconclusive"
        if len(syn["free"]) < len(row["params"]):
            region += " (over " + ", ".join(math(f) for f in syn["free"]) + " only)"
        rows.append(f"{code(row['stem'])} & {_verdict(row['verdict'])} & "
                    f"{thousands(row['states'])} & {thousands(row['zones'])} & {region} \\\\")
    return booktabs("l l r r X", "spec & verdict at defaults & states & zones & "
                    "synthesized safe region", rows, env="tabularx")


def table_synth(synth: Mapping[str, Any]) -> str:
    """The cost of synthesis per spec."""
    rows = [f"{code(r['stem'])} & {len(r['free'])} & {thousands(r['symbolic_states'])} & "
            f"{thousands(r['queries'])} & {r['seconds']:.1f} & "
            f"{thousands(r['no_merge']['symbolic_states'])} & "
            f"{r['no_merge']['seconds']:.1f} \\\\" for r in synth["synth"]]
    header = (r" & & \multicolumn{3}{c}{merging} & \multicolumn{2}{c}{no merging} \\"
              r" \cmidrule(lr){3-5} \cmidrule(l){6-7}"
              "\nspec & free & states & queries & s & states & s")
    return booktabs("l r r r r r r", header, rows)


def _grouped(rows: Sequence[Mapping[str, Any]], key: str,
             line: Callable[[Mapping[str, Any]], str]) -> list[str]:
    """Table rows with a rule between groups of consecutive equal ``key``."""
    out: list[str] = []
    for i, r in enumerate(rows):
        if i and r[key] != rows[i - 1][key]:
            out.append(r"\midrule")
        out.append(line(r))
    return out


def table_ablation(specs: Mapping[str, Any]) -> str:
    """The flagships' zone counts under each combination of reductions."""
    def line(r: Mapping[str, Any]) -> str:
        marks = [r"\checkmark" if r[k] else "--"
                 for k in ("symmetry", "clock_reduction", "deadlock")]
        return (f"{code(r['spec'])} & {' & '.join(marks)} & {thousands(r['states'])} & "
                f"{thousands(r['zones'])} & {thousands(r['transitions'])} \\\\")

    return booktabs("l c c c r r r", "spec & symmetry & clock reduction & deadlock check & "
                    "states & zones & transitions", _grouped(specs["ablation"], "spec", line))


def table_bench(bench: Mapping[str, Any]) -> str:
    """Scaled variants of the flagship."""
    rows = []
    for r in bench["runs"]:
        verdict = r["verdict"] if r["verdict"] != "inconclusive" else \
            f"inconclusive ({tex(r['limit'] or '')})"
        rows.append(f"{r['requests']} & {r['slots']} & {r['chunks']} & "
                    rf"$\times${thousands(r['scale'])} & {verdict} & "
                    f"{thousands(r['states'])} & {thousands(r['zones'])} & "
                    f"{r['seconds']:.2f} & {r['peak_mib']:.0f} \\\\")
    return booktabs("r r r r l r r r r", "requests & slots & chunks & scale & verdict & "
                    "states & zones & seconds & MiB", rows)


def table_tchecker(bench: Mapping[str, Any]) -> str:
    """The flagship's zone graph against TChecker's on the same automaton."""
    rows = []
    by_case: dict[tuple[int, int, int], dict[str, Mapping[str, Any]]] = {}
    for r in bench.get("tchecker", []):
        key = (r["requests"], r["slots"], r["chunks"])
        by_case.setdefault(key, {})["plain" if not r["symmetry"] else "default"] = r
    for (req, slots, chunks), got in sorted(by_case.items()):
        plain, default = got.get("plain"), got.get("default")
        if plain is None or default is None:
            continue

        def zones(r: Mapping[str, Any]) -> str:
            z = thousands(r["zones"])
            return z if r["verdict"] != "inconclusive" else f"$\\geq${z}"

        rows.append(f"{req}/{slots}/{chunks} & {thousands(plain['tchecker_states'])} & "
                    f"{zones(plain)} & {plain['seconds']:.2f} & {zones(default)} & "
                    f"{default['seconds']:.2f} \\\\")
    return booktabs("l r r r r r", "req./slots/chunks & TChecker & no sym., no deadl. & s & "
                    "defaults & s", rows)


def table_fischer(bench: Mapping[str, Any]) -> str:
    """Fischer's protocol with and without symmetry reduction."""
    rows = []
    for r in bench.get("fischer", []):
        verdict = r["verdict"] if r["verdict"] != "inconclusive" else \
            f"inconclusive ({tex(r['limit'] or '')})"
        rows.append(f"{r['processes']} & {'yes' if r['symmetry'] else 'no'} & {verdict} & "
                    f"{thousands(r['zones'])} & {thousands(r['transitions'])} & "
                    f"{r['seconds']:.2f} \\\\")
    return booktabs("r l l r r r", "processes & symmetry & verdict & zones & transitions & "
                    "seconds", rows)


def _checks(r: Mapping[str, str], case: str) -> bool:
    return (r[f"{case}_below"], r[f"{case}_at"], r[f"{case}_above"]) == \
        ("violated", "violated", "holds")


def _context_numbers(context: Sequence[Mapping[str, str]]) -> dict[str, str]:
    r"""``\kv`` values of the context-length study, from its CSV and its inputs."""
    kv: dict[str, str] = {}
    for r in context:
        key = f"context.{r['layout']}.{r['context']}"
        kv[f"{key}.calls"] = r["calls"]
        kv[f"{key}.chunk_gb"] = r["chunk_gb"]
        for case in study.CASES:
            kv[f"{key}.{case}.bound"] = r[f"{case}_bound"]
            kv[f"{key}.{case}.flight"] = r[f"{case}_T_flight"]
            kv[f"{key}.{case}.chunk"] = r[f"{case}_T_chunk"]
    for case in study.CASES:
        bounds = [Fraction(r[f"{case}_bound"]) for r in context]
        kv[f"study.{case}.min"] = study.fmt(min(bounds))
        kv[f"study.{case}.max"] = study.fmt(max(bounds))
        kv[f"study.{case}.covered"] = str(sum(r[f"{case}_default_hold_safe"] == "True"
                                              for r in context))
    kv["study.rows"] = str(len(context))
    kv["study.rows.checked"] = str(sum(_checks(r, c) for r in context for c in study.CASES)
                                   // len(study.CASES))
    kv["study.rows.sum"] = str(sum(r[f"{c}_bound"] == r[f"{c}_sum"] and r[f"{c}_strict"] == "True"
                                   for r in context for c in study.CASES) // len(study.CASES))
    kv["study.bytes_per_token"] = thousands(study.KV_BYTES_PER_TOKEN)
    kv["study.mla_layers"] = str(study.MLA_LAYERS)
    kv["study.mla_values"] = str(study.MLA_VALUES_PER_LAYER)
    kv["study.chunk_tokens"] = thousands(study.CHUNK_TOKENS)
    kv["study.chunk_gb"] = f"{study.CHUNK_TOKENS * study.KV_BYTES_PER_TOKEN / study.GB:.2f}"
    kv["study.flight_base"] = study.fmt(study.MOONCAKE_BASE)
    kv["study.ns_per_byte"] = study.fmt(study.MOONCAKE_PER_BYTE * 10**9)
    kv["study.s_per_gib"] = f"{float(study.MOONCAKE_PER_BYTE * 2**30):.2f}"
    kv["study.link_slow"] = str(study.LINK_SLOW // study.GB)
    kv["study.link_fast"] = str(study.LINK_FAST // study.GB)
    chunk_bytes = study.CHUNK_TOKENS * study.KV_BYTES_PER_TOKEN
    kv["study.chunk_ms_slow"] = study.fmt(study.ceil_ms(Fraction(chunk_bytes, study.LINK_SLOW))
                                          * 1000)
    kv["study.chunk_ms_fast"] = study.fmt(study.ceil_ms(Fraction(chunk_bytes, study.LINK_FAST))
                                          * 1000)
    kv["study.split_indices"] = thousands(study.SPLIT_INDICES)
    kv["study.split_calls"] = str(study.layout(study.CHUNK_TOKENS, "split")[1])
    kv["study.t_prop"] = study.fmt(study.T_PROP)
    kv["study.default_hold"] = study.fmt(study.DEFAULT_HOLD)
    kv["study.eps_ms"] = study.fmt(study.EPS * 1000)
    cover = study.typical_cover_tokens()
    kv["study.cover_mtokens"] = f"{cover / 2**20:.1f}"
    kv["study.cover_gb"] = f"{cover * study.KV_BYTES_PER_TOKEN / study.GB:.0f}"
    return kv


def table_context(context: Sequence[Mapping[str, str]]) -> str:
    """The context-length study: the typical and the errored window, and the hold each needs."""
    def covered(r: Mapping[str, Any], case: str) -> str:
        return "yes" if r[f"{case}_default_hold_safe"] == "True" else \
            r"\textcolor{red!70!black}{no}"

    def hold(r: Mapping[str, Any], case: str) -> str:
        op = ">" if r[f"{case}_strict"] == "True" else r"\geq"
        return f"${op} {r[f'{case}_bound']}$"

    def line(r: Mapping[str, Any]) -> str:
        typical = Fraction(r["typical_T_chunk"]) + Fraction(r["typical_T_flight"])
        errored = Fraction(r["errored_T_chunk"]) + Fraction(r["errored_T_flight"])
        return (f"{tex(r['layout'])} & {r['context']} & {r['calls']} & {r['chunk_gb']} & "
                f"{r['chunk_ms_fast']}--{study.fmt(typical * 1000)} & {hold(r, 'typical')} & "
                f"{covered(r, 'typical')} & {study.fmt(errored)} & {hold(r, 'errored')} & "
                f"{covered(r, 'errored')} \\\\")

    header = (r"& & & & \multicolumn{3}{c}{typical write} & \multicolumn{3}{c}{errored call} \\"
              "\n" r"\cmidrule(lr){5-7}\cmidrule(l){8-10}" "\n"
              r"layout & context & calls & GB & ms & hold (s) & 30\,s & s & hold (s) & 30\,s")
    return booktabs("l r r r r l l r l l", header, _grouped(context, "layout", line))


def table_lease(lease: Sequence[Mapping[str, str]]) -> str:
    """vLLM's lease study: the minimal lease or extension per context length."""
    def need(r: Mapping[str, str], name: str) -> str:
        op = ">" if r[f"{name}_strict"] == "True" else r"\geq"
        return f"${op} {r[f'{name}_bound']}$"

    def yes(v: str) -> str:
        return {"True": "yes", "False": r"\textcolor{red!70!black}{no}"}.get(v, v)

    rows = [f"{r['context']} & {r['kv_gb']} & {r['transfer_s']} & {need(r, 'measured')} & "
            f"{yes(r['measured_default_safe'])} & {yes(r['measured_remedy_safe'])} & "
            f"{need(r, 'renewed')} & {yes(r['renewed_default_safe'])} & {need(r, 'push')} & "
            f"{yes(r['push_default_safe'])} & {yes(r['push_remedy_safe'])} \\\\"
            for r in lease]
    header = (r"& & & \multicolumn{3}{c}{measured: $L$} & \multicolumn{2}{c}{renewed: $E$}"
              r" & \multicolumn{3}{c}{push: $L$} \\" "\n"
              r"\cmidrule(lr){4-6}\cmidrule(lr){7-8}\cmidrule(l){9-11}" "\n"
              r"context & GB & s & needed & 30\,s & 300\,s & needed & 20\,s & needed & 30\,s"
              r" & 300\,s")
    return booktabs("r r r l l l l l l l l", header, rows)


def _lease_numbers(lease: Sequence[Mapping[str, str]]) -> dict[str, str]:
    r"""``\kv`` values of vLLM's lease study, from its CSV."""
    kv: dict[str, str] = {}
    for r in lease:
        for name in ("measured", "renewed", "push"):
            kv[f"lease.{r['context']}.{name}"] = r[f"{name}_bound"]
        kv[f"lease.{r['context']}.transfer"] = r["transfer_s"]
    kv["lease.rows"] = str(len(lease))
    kv["lease.rows.checked"] = str(sum(
        all((r[f"{n}_below"], r[f"{n}_at"], r[f"{n}_above"]) == ("violated", "violated", "holds")
            for n in ("measured", "renewed", "push")) for r in lease))
    return kv


def fig_context(context: Sequence[Mapping[str, str]]) -> str:
    """The minimal safe hold against context length (log-log), with the 30 s default."""
    def coords(name: str, case: str) -> str:
        return " ".join(f"({r['tokens']},{r[f'{case}_bound']})" for r in context
                        if r["layout"] == name)

    first = [r for r in context if r["layout"] == context[0]["layout"]]
    tokens = [r["tokens"] for r in first]
    labels = [r["context"] for r in first]
    styles = {"chunked": "blue!70!black, mark=*", "split": "violet!80!black, mark=triangle*",
              "unchunked": "orange!80!black, mark=square*"}
    names = {"chunked": r"8{,}192-token chunks, one call each",
             "split": r"8{,}192-token chunks split into calls",
             "unchunked": "one chunk per request"}
    lines = [
        r"\begin{tikzpicture}",
        r"\begin{loglogaxis}[width=0.92\linewidth, height=7cm,",
        r"  xlabel={context length (tokens)}, ylabel={minimal safe $T_{\mathit{hold}}$ (s)},",
        f"  xtick={{{','.join(tokens)}}}, xticklabels={{{','.join(labels)}}},",
        r"  log basis y=10, grid=major, legend cell align=left,",
        r"  legend style={font=\footnotesize, at={(0.5,-0.2)}, anchor=north, legend columns=2}]",
    ]
    for case, pattern in (("errored", "thick"), ("typical", "thick, densely dotted")):
        for name in dict.fromkeys(r["layout"] for r in context):
            lines.append(f"\\addplot[{pattern}, {styles.get(name, 'black')}] coordinates {{"
                         + coords(name, case) + "};")
            lines.append(f"\\addlegendentry{{{case}: {names.get(name, tex(name))}}}")
    lines += [
        r"\addplot[thick, dashed, red!70!black, domain=" + tokens[0] + ":" + tokens[-1]
        + r", samples=2] {30};",
        r"\addlegendentry{SGLang's default release timeout (30\,s)}",
        r"\end{loglogaxis}",
        r"\end{tikzpicture}",
    ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- per spec


def spec_body(path: Path) -> str:
    """A spec's text without its leading header comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
        i += 1
    return "\n".join(lines[i:]).rstrip() + "\n"


def model_lines(body: str) -> int:
    """Lines of model text: neither blank nor comment-only."""
    return sum(1 for line in body.splitlines()
               if line.strip() and not line.lstrip().startswith("#"))


def study_tex(row: Mapping[str, Any], syn: Mapping[str, Any], has_figure: bool) -> str:
    """One spec's result paragraph (and its counterexample figure)."""
    s = row["stem"]
    parts = [f"% {row['path']}: generated by `python -m tools.artifacts`; do not edit.",
             r"\par\smallskip\noindent\fbox{\parbox{\dimexpr\linewidth-2\fboxsep-2\fboxrule}{"
             r"\small"]
    verdict = _verdict(row["verdict"])
    head = (f"\\textbf{{Result}} ({code(row['path'])}, at {point(row['params'])}): "
            f"{verdict}")
    if row["verdict"] == "violated":
        head += (f" --- {code(row['property'])}: {tex(row['message'])}, after "
                 f"{row['events']} events (\\cref{{fig:{s}}})")
    head += (f". Exploration: {thousands(row['states'])} states, {thousands(row['zones'])} "
             f"zones, {thousands(row['transitions'])} transitions.")
    parts.append(head)
    if syn["complete"]:
        free = ", ".join(math(f) for f in syn["free"])
        covers = " (of the safety properties; liveness is checked at fixed values)" \
            if row.get("liveness") else ""
        parts.append(rf"\\ \textbf{{Synthesized safe region}}{covers} over {free}: "
                     f"{math(syn['region'])} ({thousands(syn['symbolic_states'])} symbolic "
                     f"states).")
    else:
        parts.append(rf"\\ \textbf{{Synthesis}}: inconclusive ({tex(syn['limit'] or '')}).")
    parts.append("}}\\par\\smallskip")
    if has_figure:
        events = row["events"] or 0
        height = "0.9" if events > PAGE_EVENTS else "0.75" if events > TALL_EVENTS else "0.45"
        where = "p" if events > PAGE_EVENTS else "tbp"
        what = tex(row["message"]) if row["property"] == "assert" else \
            f"{code(row['property'])}, {tex(row['message'])}"
        parts += [
            rf"\begin{{figure}}[{where}]", r"\centering",
            rf"\includegraphics[width=\linewidth,height={height}\textheight,"
            rf"keepaspectratio]{{{s}}}",
            rf"\caption{{Counterexample of {code(s)} at its defaults: {what}.}}"
            rf"\label{{fig:{s}}}",
            r"\end{figure}",
        ]
    return "\n".join(parts) + "\n"


# ----------------------------------------------------------------------------- generation


def _boundary_dot(root: Path) -> str:
    o = api.check(api.load_spec(root / "spec/sglang/deferred_release.kvr"),
                  T_hold=BOUNDARY_HOLD)
    if o.trace is None:
        raise RuntimeError(f"deferred_release at T_hold={BOUNDARY_HOLD}: no counterexample")
    t = o.trace
    from checker.model import trace as tr

    t = tr.Trace(t.model, "spec/sglang/deferred_release.kvr", t.actors, t.params, t.verdict,
                 t.property, t.message, t.steps, t.vars)
    return render.sequence_dot(t)


def _read(root: Path, name: str) -> Any:
    return json.loads((root / DATA / name).read_text(encoding="utf-8"))


def generate(root: Path) -> dict[str, bytes]:
    """Every file of ``paper/generated/``, from ``paper/data/`` and short runs."""
    specs = _read(root, "specs.json")
    synth = _read(root, "synth.json")
    bench = _read(root, "bench.json")
    with (root / DATA / "context_length.csv").open(newline="", encoding="utf-8") as f:
        context = list(csv.DictReader(f))
    with (root / DATA / "lease_study.csv").open(newline="", encoding="utf-8") as f:
        lease = list(csv.DictReader(f))
    regions = {r["stem"]: r for r in synth["synth"]}
    for row in specs["specs"]:
        row["lines"] = model_lines(spec_body(root / row["path"]))
    files: dict[str, str] = {
        "numbers.tex": numbers_tex(_numbers(specs, synth, bench, context) | _lease_numbers(lease)),
        "table-specs.tex": table_specs(specs, synth),
        "table-synth.tex": table_synth(synth),
        "table-ablation.tex": table_ablation(specs),
        "table-bench.tex": table_bench(bench),
        "table-tchecker.tex": table_tchecker(bench),
        "table-fischer.tex": table_fischer(bench),
        "table-context.tex": table_context(context),
        "fig-context.tex": fig_context(context),
        "table-lease.tex": table_lease(lease),
        f"deferred_release_T{BOUNDARY_HOLD}.dot": _boundary_dot(root),
    }
    for row in specs["specs"]:
        path = root / row["path"]
        files[f"spec-{row['stem']}.kvr"] = spec_body(path)
        has_figure = (root / "counterexamples" / f"{row['stem']}.dot").exists()
        files[f"study-{row['stem']}.tex"] = study_tex(row, regions[row["stem"]], has_figure)
    from tools.artifacts import simulation

    return {f"{OUT}/{k}": v.encode() for k, v in files.items()} | simulation.figure_files(root)


def equal(root: Path, rel: str, data: bytes) -> bool:
    """Byte equality (everything here is deterministic); the simulation plot's SVG
    by the data it was drawn from (matplotlib versions differ in their bytes)."""
    from tools.artifacts import simulation

    if rel == simulation.FIG_SVG:
        return simulation.same_plot((root / rel).read_bytes(), data)
    return (root / rel).read_bytes() == data


# ----------------------------------------------------------------------------- the PDF


def sources(root: Path) -> list[Path]:
    """Every file the PDF is built from, in a fixed order."""
    paper = root / "paper"
    found: list[Path] = []
    for pattern in ("*.tex", "*.bib", "build.sh", "sections/*.tex", "generated/*"):
        found += sorted(p for p in paper.glob(pattern) if p.is_file())
    found += sorted((root / "counterexamples").glob("*.dot"))
    return found


def sources_digest(root: Path, files: Iterable[Path] | None = None) -> str:
    """SHA-256 over the paths and bytes of :func:`sources`."""
    h = hashlib.sha256()
    for p in files if files is not None else sources(root):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def pdf_digest(pdf: bytes) -> str | None:
    """The sources digest stamped into a PDF by ``paper/build.sh``, if any."""
    m = re.search(rb"kvrace-sources-([0-9a-f]{64})", pdf)
    return m.group(1).decode() if m else None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tools.artifacts.paper digest``: print the sources digest."""
    import sys

    from tools.artifacts import ROOT

    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["digest"]:
        print("usage: python -m tools.artifacts.paper digest", file=sys.stderr)
        return 2
    print(sources_digest(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

