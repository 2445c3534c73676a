"""The sweep's plot: estimated P(violation) against one parameter, with its
confidence band and, when known, the exact safe threshold from synthesis.

matplotlib is imported here only, when a plot is asked for; output is deterministic
byte for byte (no dates or tool versions in the file, a fixed SVG hash salt).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from checker.errors import KvraceError
from checker.simulate.runner import SimResult

FORMATS = (".svg", ".png", ".pdf")


class PlotError(KvraceError):
    """A plot that cannot be written (unknown format, unwritable path)."""


@dataclass(frozen=True)
class Threshold:
    """The boundary of the exact safe region over one parameter: safe ``above`` (or
    below) ``value``, strictly or not."""

    value: Fraction
    above: bool
    strict: bool

    def text(self, param: str) -> str:
        """``T_hold > 7``."""
        op = (">" if self.strict else ">=") if self.above else ("<" if self.strict else "<=")
        v = self.value
        shown = str(v.numerator) if v.denominator == 1 else f"{float(v):g}"
        return f"{param} {op} {shown}"


def sweep_plot(path: str, param: str, xs: Sequence[Fraction], results: Sequence[SimResult],
               threshold: Threshold | None = None, title: str = "", logy: bool = False
               ) -> None:
    """Write the plot of ``results`` (one per value in ``xs``) to ``path`` (.svg, .png
    or .pdf), on a logarithmic probability axis if ``logy`` (estimates of 0 are then
    drawn at its floor, 1e-5); raises PlotError."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise PlotError(f"cannot write a plot to {path}: use .svg, .png or .pdf")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.hashsalt": "kvrace", "svg.fonttype": "path",
                                "font.family": "DejaVu Sans", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(5.5, 3.2))
        x = [float(v) for v in xs]
        floor = 1e-5 if logy else 0.0
        p = [max(r.p, floor) for r in results]
        lo = [max(r.lo, floor) for r in results]
        hi = [max(r.hi, floor) for r in results]
        conf = results[0].confidence if results else 0.95
        ax.fill_between(x, lo, hi, color="#9ecae1", alpha=0.6, linewidth=0,
                        label=f"{conf:.0%} Clopper–Pearson interval")
        ax.plot(x, p, color="#08519c", marker="o", markersize=2.5, linewidth=1.2,
                label="estimated P(violation)")
        if threshold is not None:
            ax.axvline(float(threshold.value), color="#cb181d", linestyle="--", linewidth=1.2,
                       label=f"exact safe bound (synth): {threshold.text(param)}")
        ax.set_xlabel(param)
        ax.set_ylabel("P(violation)")
        if logy:
            ax.set_yscale("log")
            ax.set_ylim(floor, 1.0)
        else:
            ax.set_ylim(-0.02, max(0.05, max(hi, default=0.0) * 1.05))
        ax.grid(True, color="#dddddd", linewidth=0.5)
        if title:
            ax.set_title(title, fontsize=9)
        ax.legend(loc="best", fontsize=7, frameon=False)
        fig.tight_layout()
        metadata: dict[str, str | None]
        if suffix == ".svg":
            metadata = {"Date": None, "Creator": None}
        elif suffix == ".png":
            metadata = {"Software": None}
        else:
            metadata = {"CreationDate": None, "Creator": None, "Producer": None}
        try:
            fig.savefig(path, format=suffix[1:], metadata=metadata, dpi=150)
        except OSError as exc:
            raise PlotError(f"cannot write {path}: {exc.strerror or exc}") from None
        finally:
            plt.close(fig)
