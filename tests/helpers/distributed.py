"""What the distributed explorer's tests share (``tests/test_distributed*.py``)."""

from __future__ import annotations

from helpers import ROOT

SPECS = [ROOT / "spec" / f"{name}.kvr" for name in (
    "classic/csma_cd", "classic/fischer", "classic/train_gate",
    "sglang/all_ranks_ack", "sglang/deferred_release", "sglang/drained_ack_or_timeout",
    "sglang/immediate_release", "sglang/kv_checksum", "sglang/paired_abort",
    "sglang/prefill_failure_release", "sglang/shared_room_samples", "sglang/staging_ring",
    "sglang/strict_never_freed", "sglang/strict_no_release_on_timeout",
    "vllm/lease_expired_read", "vllm/lease_renewal", "vllm/multi_handle_invalidation")]
"""Specs that between them use every construct the distributed explorer handles
(symmetry, broadcast, deadlines, bounded responses, violations of each kind); the
random models of ``tests/test_differential.py`` compare partitions on many more."""
COUNTS = ("states", "zones", "transitions", "stored", "explored", "depth")
