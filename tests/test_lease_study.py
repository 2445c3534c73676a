"""vLLM's lease against context length (``tools/artifacts/lease_study.py``).

The committed CSV must reproduce; each bound equals the relation its spec's
synthesized region gives, with the row's transfer time put in.
"""

from __future__ import annotations

import csv
from fractions import Fraction
from pathlib import Path

import pytest

from tools.artifacts import lease_study, study

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run `python -m tools.artifacts --only measurements` to regenerate"


def committed() -> list[dict[str, str]]:
    return study.read_csv(ROOT / lease_study.CSV)


def test_lease_study_inputs_are_derived() -> None:
    # The SGLang study's bytes per token over 12 GB/s, rounded up to the ms.
    assert lease_study.transfer_time(8_192) == Fraction("0.048")
    assert lease_study.transfer_time(1_048_576) == Fraction("6.141")
    assert [c.name for c in lease_study.CASES] == ["measured", "renewed", "push"]


def test_lease_study_csv_is_consistent() -> None:
    rows = committed()
    assert [r["context"] for r in rows] == list(study.SIZES)
    for r in rows:
        t = Fraction(r["transfer_s"])
        # lease_expired_read: L > Q_max + T_read (Q_max = 62)
        assert Fraction(r["measured_bound"]) == 62 + t, r
        # lease_renewal: E > H + T_hb (5 + 1), whatever the read
        assert Fraction(r["renewed_bound"]) == 6, r
        # push_write_after_expiry: L > R_max + T_enter + T_hs + T_write (62 + 1 + 5)
        assert Fraction(r["push_bound"]) == 68 + t, r
        for name in ("measured", "renewed", "push"):
            assert r[f"{name}_strict"] == "True", r
            assert (r[f"{name}_below"], r[f"{name}_at"], r[f"{name}_above"]) == \
                ("violated", "violated", "holds"), r
        # The 30 s default never covers an unrenewed lease at the measured gaps;
        # the 300 s remedy always does; the 20 s extension covers the renewed case.
        assert (r["measured_default_safe"], r["measured_remedy_safe"]) == ("False", "True")
        assert (r["push_default_safe"], r["push_remedy_safe"]) == ("False", "True")
        assert r["renewed_default_safe"] == "True"


@pytest.mark.slow
def test_lease_study_reproduces_for_the_shortest_context() -> None:
    rows = lease_study.lease_study(ROOT, ["8k"])
    fresh = list(csv.DictReader(lease_study.csv_text(rows).splitlines()))
    assert fresh == committed()[:1], REGENERATE
