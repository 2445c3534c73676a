"""A long differential campaign: the engines compared on many random models.

    python tests/campaign.py --models 10000 --seed 0 [--jobs 2] [--out DIR]

Model ``k`` of a campaign is ``modelgen.model_for_seed(seed + k)``, so a campaign
is the same on every machine whatever ``--jobs``; each model is compared by
:func:`diffcheck.compare_model` in a worker process.  Progress goes to stderr;
the last line of stdout is the summary: models, states compared (reference
states, and discrete states where the compiled model and the interpreter were
compared), disagreements, skipped (the reference needed more than its state
limit), seconds.  Every disagreeing model is written to ``--out`` (default
``campaign-out``) as ``seed-N.kvr`` with the problems in a comment, ready to
become a regression spec (``tests/regressions/``).  Exit 0 when no model
disagreed, 1 otherwise.

With ``KVRACE_NATIVE=1`` in the environment every model runs on its compiled
successor function (``checker/model/native.py``: one compilation per model, cached),
which is then also compared with the generated Python in every state; the summary
says on how many models it ran.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
for p in (str(HERE.parent), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from diffcheck import compare_model  # noqa: E402
from modelgen import model_for_seed  # noqa: E402


@dataclass(frozen=True)
class Result:
    """The comparison of one model, as sent back by a worker."""

    seed: int
    text: str
    skipped: bool
    ref_states: int
    oracle_states: int
    verdict: str | None
    problems: tuple[str, ...]
    lu_restarts: int = 0
    native: bool = False


def run_one(seed: int) -> Result:
    """Generate and compare the model of ``seed``."""
    text = model_for_seed(seed, extended=True)
    try:
        out = compare_model(text)
    except Exception as exc:  # the generator's model does not elaborate, or the harness broke
        return Result(seed, text, False, 0, 0, None,
                      (f"comparison failed: {type(exc).__name__}: {exc}",))
    return Result(seed, text, out.skipped, out.ref_states, out.oracle_states, out.verdict,
                  tuple(out.problems), out.lu_restarts, out.native)


def category(problem: str) -> str:
    """A short name for the kind of a problem (for the summary)."""
    if "crashed: _Fault" in problem or "crashed: Fault" in problem:
        return "uncaught model fault"
    if "crashed" in problem:
        return "crash"
    if "comparison failed" in problem:
        return "harness"
    return "disagreement"


def write_model(out: Path, res: Result) -> Path:
    """The disagreeing model as a spec file whose header comment holds the problems."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"seed-{res.seed}.kvr"
    header = [f"# campaign seed {res.seed}: the engines disagree"]
    for p in res.problems:
        header += [f"#   {line}" for line in p.splitlines()]
    path.write_text("\n".join(header) + "\n" + res.text)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=10_000, help="how many models (default 10000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first model (default 0)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--out", type=Path, default=Path("campaign-out"),
                    help="directory for the disagreeing models (default campaign-out)")
    ap.add_argument("--progress", type=int, default=500,
                    help="print progress every N models (default 500)")
    args = ap.parse_args(argv)
    seeds = range(args.seed, args.seed + args.models)
    start = time.perf_counter()
    stats: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    bad: list[Result] = []
    with multiprocessing.get_context("spawn").Pool(max(1, args.jobs)) as pool:
        for n, res in enumerate(pool.imap(run_one, seeds, chunksize=4), start=1):
            stats["oracle_states"] += res.oracle_states
            stats["lu_restarts"] += res.lu_restarts
            stats["native"] += res.native
            if res.skipped:
                stats["skipped"] += 1
            else:
                stats["ref_states"] += res.ref_states
                stats[res.verdict or "none"] += 1
            if res.problems:
                bad.append(res)
                kinds.update({category(p) for p in res.problems})
                path = write_model(args.out, res)
                print(f"seed {res.seed}: DISAGREEMENT ({res.problems[0].splitlines()[0]}) "
                      f"-> {path}", file=sys.stderr, flush=True)
            if n % args.progress == 0 or n == args.models:
                print(f"[{n}/{args.models}] {time.perf_counter() - start:.1f} s, "
                      f"{stats['ref_states']} reference states, {len(bad)} disagreements",
                      file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    verdicts = ", ".join(f"{v} {stats[v]}" for v in ("holds", "violated", "error", "none")
                         if stats[v])
    print(f"verdicts (zone explorer, breadth-first): {verdicts}")
    if kinds:
        print("disagreeing models by kind: " + ", ".join(f"{k} {c}" for k, c in kinds.items()))
    print(f"models {args.models}, states compared {stats['ref_states']}"
          f" (reference explorer) and {stats['oracle_states']} (compiled model against the"
          f" interpreter), disagreements {len(bad)}, skipped {stats['skipped']},"
          f" unconfirmed LU deadlocks (reruns with Extra_M) {stats['lu_restarts']},"
          f" on the compiled successor function {stats['native']},"
          f" seconds {seconds:.1f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
