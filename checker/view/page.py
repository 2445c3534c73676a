"""The viewer page: the static assets with a run's data inlined.

The page is one HTML document with its CSS, JavaScript and data inline and no
reference to anything outside it, so the same text is written to a file by
``kvrace view --html`` (it works offline, with no server) and sent by the server
(which adds the simulator: ``live``).
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["Embedded", "page_html"]

_PLACEHOLDER = re.compile(r"__(TITLE|CSS|JS|DATA)__")
"""Where the template takes the page's title, style, code and data."""


def _asset(name: str) -> str:
    return resources.files("checker.view").joinpath("static", name).read_text("utf-8")


def _script_json(data: object) -> str:
    """JSON that is safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_html(view: dict[str, Any], check: dict[str, Any] | None, live: bool,
              start: int | str = 0) -> str:
    """The viewer for ``view`` (:func:`checker.view.steps.view_json`).

    ``check`` is the verdict, property, message and violating step of the check that
    found the run (None when the run is not a counterexample); ``live`` enables the
    simulator, which needs the server; ``start`` is the step the page opens at (a
    number, or ``"race"``: the violating step), unless its address names one
    (``#step=N``, ``#race``)."""
    data = {"view": view, "check": check, "live": live, "start": start}
    fill = {
        "TITLE": html.escape(str(view.get("model", ""))),
        "CSS": _asset("viewer.css"),
        "JS": _asset("viewer.js").replace("</", "<\\/"),
        "DATA": _script_json(data),
    }
    # One pass over the template: what is inserted (a model named __JS__, the data)
    # is never searched for placeholders.
    return _PLACEHOLDER.sub(lambda m: fill[m.group(1)], _asset("viewer.html"))


class Embedded:
    """A viewer page to show inline in Jupyter (in an isolated frame) or to save."""

    def __init__(self, page: str, height: int = 720) -> None:
        self.page = page
        self.height = height

    def __repr__(self) -> str:
        return f"<kvrace viewer page, {len(self.page):,} characters; .save(path) writes it>"

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (a self-contained HTML file)."""
        out = Path(path)
        out.write_text(self.page, encoding="utf-8")
        return out

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.page, quote=True)}" width="100%"'
                f' height="{self.height}" style="border:1px solid #cfd8dc"></iframe>')
