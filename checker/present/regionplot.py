"""``synth --plot``: the synthesized region over two free parameters, drawn.

The box of the two ranges is the safe colour; each unsafe convex piece (or, with
``--query``, each piece where the query is reachable) is drawn over it, with its
boundary solid where the piece includes it and dashed where it does not (a strict
constraint).  matplotlib is imported only here, when a plot is asked for; the
file is deterministic byte for byte (a fixed SVG hash salt, no date or tool
version in it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from checker.errors import KvraceError

if TYPE_CHECKING:
    from checker.smt.regions import Polygon

FORMATS = (".svg", ".png", ".pdf")
SAFE, UNSAFE, EDGE = "#c7e9c0", "#fb6a4a", "#a50f15"


class RegionPlotError(KvraceError):
    """A region plot that cannot be drawn or written."""


def region_plot(path: str, x: str, y: str, box: tuple[Fraction, Fraction, Fraction, Fraction],
                pieces: Sequence[Polygon], title: str, region: str,
                query: str | None = None) -> None:
    """Write the plot to ``path`` (.svg, .png or .pdf); raises RegionPlotError."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise RegionPlotError(f"cannot write a plot to {path}: use .svg, .png or .pdf")
    import logging

    # A first run builds matplotlib's font cache and says so on stderr: not ours to say.
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.patches import Polygon as Shape

    inside, outside = (("reachable", "not reachable") if query is not None
                       else ("unsafe", "safe"))
    with matplotlib.rc_context({"svg.hashsalt": "kvrace", "svg.fonttype": "path",
                                "font.family": "DejaVu Sans", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(5.0, 4.2))
        x_lo, x_hi, y_lo, y_hi = (float(v) for v in box)
        ax.add_patch(Shape([(x_lo, y_lo), (x_hi, y_lo), (x_hi, y_hi), (x_lo, y_hi)],
                           closed=True, facecolor=SAFE, edgecolor="black", linewidth=0.8))
        for poly in pieces:
            pts = [(float(a), float(b)) for a, b in poly.vertices]
            ax.add_patch(Shape(pts, closed=True, facecolor=UNSAFE, edgecolor="none",
                               alpha=0.85))
            n = len(pts)
            for i, strict in enumerate(poly.strict):
                if strict is None:
                    continue
                (x0, y0), (x1, y1) = pts[i], pts[(i + 1) % n]
                ax.plot([x0, x1], [y0, y1], color=EDGE, linewidth=1.3,
                        linestyle="--" if strict else "-")
        pad_x, pad_y = (x_hi - x_lo) * 0.03 or 0.5, (y_hi - y_lo) * 0.03 or 0.5
        ax.set_xlim(x_lo - pad_x, x_hi + pad_x)
        ax.set_ylim(y_lo - pad_y, y_hi + pad_y)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(title, fontsize=9)
        handles = [Patch(facecolor=SAFE, edgecolor="black", linewidth=0.8, label=outside),
                   Patch(facecolor=UNSAFE, label=inside),
                   matplotlib.lines.Line2D([], [], color=EDGE, label=f"boundary in the {inside}"
                                           " part"),
                   matplotlib.lines.Line2D([], [], color=EDGE, linestyle="--",
                                           label="boundary not in it (strict)")]
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                  ncol=2, fontsize=7, frameon=False)
        fig.text(0.5, 0.005, _clip_text(f"{'reachable for' if query else 'safe region'}:"
                                        f" {region}"), ha="center", va="bottom", fontsize=7)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
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
            raise RegionPlotError(f"cannot write {path}: {exc.strerror or exc}") from None
        finally:
            plt.close(fig)


def _clip_text(text: str, width: int = 110) -> str:
    """``text`` cut to ``width`` characters (an ellipsis when cut)."""
    return text if len(text) <= width else text[:width - 1] + "…"
