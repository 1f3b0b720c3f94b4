"""Kafka log segments as bytes: where each record batch lies and which offsets it
holds, and a seeded corruption of a segment's tail (Jepsen's `jepsen.nemesis.file`:
bit flips, or a truncated tail), described by the byte range and the offsets it hit.

Only the v2 batch header is read (magic 2, every Kafka since 0.11): base offset at
byte 0 (int64), batch length at 8 (int32, the bytes after that field), last offset
delta at 23 (int32).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Any, Literal

CorruptMode = Literal["bitflip", "truncate"]
HEADER = 61  # a v2 batch header's size: a shorter tail is a torn batch
# How far back from the end a corruption may land: the records most recently
# acknowledged, which followers may not have fetched yet.
TAIL_BYTES = 64 * 1024
FLIPS = 8  # bits a bitflip changes


@dataclass(frozen=True)
class Batch:
    pos: int  # first byte in the file
    end: int  # one past its last byte
    base: int  # first offset
    last: int  # last offset


def batches(data: bytes) -> list[Batch]:
    """The whole batches of a segment, in file order; a torn last batch is left out."""
    out: list[Batch] = []
    pos = 0
    while pos + HEADER <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if length < HEADER - 12 or end > len(data):
            break
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append(Batch(pos, end, base, base + delta))
        pos = end
    return out


@dataclass(frozen=True)
class Corruption:
    mode: CorruptMode
    size_before: int
    size_after: int
    first_byte: int  # the damaged range [first_byte, last_byte]
    last_byte: int
    flips: tuple[int, ...]  # bit positions flipped (byte * 8 + bit), bitflip only
    offsets: tuple[int, int] | None  # first and last offset of the batches it hit

    def apply(self, data: bytes) -> bytes:
        if self.mode == "truncate":
            return data[: self.size_after]
        out = bytearray(data)
        for bit in self.flips:
            out[bit // 8] ^= 1 << (bit % 8)
        return bytes(out)

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "mode": self.mode,
            "size_before": self.size_before,
            "size_after": self.size_after,
            "bytes": [self.first_byte, self.last_byte],
            "offsets": list(self.offsets) if self.offsets else None,
        }
        if self.mode == "bitflip":
            d["flipped_bits"] = len(self.flips)
        return d


def plan(data: bytes, mode: CorruptMode, seed: int) -> Corruption | None:
    """A seeded corruption of the last TAIL_BYTES of a segment; None if it is empty."""
    size = len(data)
    if size == 0:
        return None
    rng = random.Random(seed)
    lo = max(0, size - TAIL_BYTES)
    if mode == "truncate":
        cut = rng.randrange(lo, size)
        first, last, flips, after = cut, size - 1, (), cut
    else:
        picked = sorted(rng.sample(range(lo * 8, size * 8), min(FLIPS, (size - lo) * 8)))
        flips = tuple(picked)
        first, last, after = flips[0] // 8, flips[-1] // 8, size
    hit = [b for b in batches(data) if b.end > first and b.pos <= last]
    offsets = (hit[0].base, hit[-1].last) if hit else None
    return Corruption(mode, size, after, first, last, flips, offsets)
