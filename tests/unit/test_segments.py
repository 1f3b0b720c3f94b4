"""The segment reader and the seeded corruption the `corrupt` fault applies: which
bytes it damages and which offsets those bytes held, on segments built here in
Kafka's v2 batch layout."""

from __future__ import annotations

import itertools
import struct

import pytest
from kafka_trial.cluster.segments import FLIPS, HEADER, TAIL_BYTES, batches, plan


def batch(base: int, count: int, payload: int) -> bytes:
    """A v2 record batch of `count` records: the header fields the reader uses are
    real; the records are opaque bytes."""
    body = (
        struct.pack(">ibIhi", 0, 2, 0, 0, count - 1)  # epoch, magic, crc, attributes, delta
        + bytes(HEADER - 12 - 15)  # timestamps, producer id/epoch, sequence, count
        + bytes([7]) * payload
    )
    return struct.pack(">qi", base, len(body)) + body


def segment(n: int, per: int = 10, payload: int = 500) -> bytes:
    return b"".join(batch(i * per, per, payload) for i in range(n))


def test_batches_give_each_batch_its_bytes_and_offsets() -> None:
    data = segment(3)
    got = batches(data)
    assert [(b.base, b.last) for b in got] == [(0, 9), (10, 19), (20, 29)]
    assert got[0].pos == 0 and got[-1].end == len(data)
    assert all(a.end == b.pos for a, b in itertools.pairwise(got))


def test_a_torn_last_batch_is_not_a_batch() -> None:
    data = segment(3)
    size = len(data) // 3
    assert len(batches(data[:-1])) == 2
    assert len(batches(data[: 2 * size + HEADER - 1])) == 2  # a torn header
    assert len(batches(data[: size + 1])) == 1


def test_truncate_cuts_within_the_tail_and_names_the_batches_cut() -> None:
    data = segment(400)  # ~200 KB: the tail is the last 64 KiB
    for seed in range(20):
        c = plan(data, "truncate", seed)
        assert c is not None and c.mode == "truncate"
        assert len(data) - TAIL_BYTES <= c.size_after < len(data) == c.size_before
        cut = c.apply(data)
        assert len(cut) == c.size_after and data.startswith(cut)
        # The batch that held the cut byte and every one after it are the offsets hit.
        whole = batches(cut)
        assert c.offsets is not None
        assert c.offsets[0] == (whole[-1].last + 1 if whole else 0)
        assert c.offsets[1] == batches(data)[-1].last


def test_bitflip_flips_exactly_its_bits_in_the_tail_and_names_their_batches() -> None:
    data = segment(400)
    c = plan(data, "bitflip", 3)
    assert c is not None and len(c.flips) == FLIPS and c.size_after == len(data)
    out = c.apply(data)
    diff = sum(bin(a ^ b).count("1") for a, b in zip(data, out, strict=True))
    assert diff == FLIPS and len(out) == len(data)
    changed = [i for i, (a, b) in enumerate(zip(data, out, strict=True)) if a != b]
    assert changed[0] == c.first_byte >= len(data) - TAIL_BYTES and changed[-1] == c.last_byte
    held = [b for b in batches(data) if any(b.pos <= i < b.end for i in changed)]
    assert c.offsets == (held[0].base, held[-1].last)
    assert c.apply(out) == data  # a flip is its own inverse: the plan is exact


def test_the_same_seed_corrupts_the_same_way_and_an_empty_segment_not_at_all() -> None:
    data = segment(50)
    assert plan(data, "bitflip", 9) == plan(data, "bitflip", 9)
    assert plan(data, "bitflip", 9) != plan(data, "bitflip", 10)
    assert plan(b"", "truncate", 1) is None


@pytest.mark.parametrize("mode", ["bitflip", "truncate"])
def test_a_small_segment_is_corrupted_anywhere_in_it(mode: str) -> None:
    data = segment(2, payload=20)
    c = plan(data, mode, 5)  # type: ignore[arg-type]
    assert c is not None and 0 <= c.first_byte <= c.last_byte < len(data)
    assert c.offsets is not None and 0 <= c.offsets[0] <= c.offsets[1] <= 19
