#!/usr/bin/env bash
# Build paper/paper.pdf from paper/*.tex, paper/sections/, paper/generated/ and
# the counterexample diagrams.  Installs what it needs on a fresh Debian
# machine (TeX Live with pgfplots, latexmk, Graphviz, the kvrace package).
#
#   bash paper/build.sh                  # install what is missing, then build
#   bash paper/build.sh --install-only   # only install TeX Live, latexmk, Graphviz
#
# It does not rerun kvrace: `python -m tools.artifacts` regenerates the
# tables, numbers and diagram sources first when a spec or the tool changed.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v pdflatex >/dev/null 2>&1 || need+=(texlive-latex-base texlive-latex-recommended
  texlive-latex-extra texlive-pictures texlive-fonts-recommended lmodern)
command -v latexmk >/dev/null 2>&1 || need+=(latexmk)
command -v dot >/dev/null 2>&1 || need+=(graphviz)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null
fi
[ "${1:-}" = "--install-only" ] && exit 0
# The Python that has kvrace's dependencies: $KVRACE_PYTHON, else the clone's .venv
# (made by .ci/setup when missing), else python3.
if [ -n "${KVRACE_PYTHON:-}" ]; then PY=$KVRACE_PYTHON
elif [ -x .venv/bin/python ] || ! python3 -c "import checker.api" 2>/dev/null; then
  [ -x .venv/bin/python ] || bash .ci/setup
  PY=.venv/bin/python
else PY=python3
fi

out=paper/_build
rm -rf "$out"
mkdir -p "$out/figures"
for src in counterexamples/*.dot paper/generated/*.dot; do
  dot -Tpdf "$src" -o "$out/figures/$(basename "${src%.dot}").pdf"
done
digest=$("$PY" -m tools.artifacts.paper digest)
printf '\\pdfinfo{/KvraceSources (kvrace-sources-%s)}\n' "$digest" > "$out/stamp.tex"

# Reproducible PDF metadata: fixed dates and trailer id.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export FORCE_SOURCE_DATE=1
(cd paper && latexmk -pdf -interaction=nonstopmode -halt-on-error -quiet \
   -output-directory=_build paper.tex >_build/latexmk.log 2>&1) || {
  echo "paper/build.sh: LaTeX failed; the end of paper/_build/paper.log:" >&2
  tail -n 40 "$out/paper.log" >&2
  exit 1
}
if grep -E "LaTeX Warning: (Reference|Citation).*undefined|There were undefined" \
     "$out/paper.log" >&2; then
  echo "paper/build.sh: undefined references or citations (see above)" >&2
  exit 1
fi
cp "$out/paper.pdf" paper/paper.pdf
echo "wrote paper/paper.pdf (sources digest $digest)"
