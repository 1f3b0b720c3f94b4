"""Who led a partition when its witnesses were acknowledged, and who took over after,
from cluster-state.jsonl's samples: what the leader lane shows, said in words.

A sample is the metadata the cluster gave at that moment, once a second; a broker cut
off from the controller may go on acknowledging after the metadata names another
leader, and the sentence then says the takeover came before the last acknowledgement.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_trial.contracts.cluster_state import StateSample


@dataclass(frozen=True)
class Handover:
    partition: int
    leader: int  # the leader in the last sample at or before the first acknowledgement
    isr: tuple[int, ...]  # in that sample
    successor: int | None  # the first other leader a later sample names
    took_over: float | None  # the time of that sample, seconds
    last_sample: float


def handover(states: list[StateSample], partition: int, acked_at: float) -> Handover | None:
    """The partition's leader when a value was acknowledged at `acked_at` (seconds) and
    its successor; None without a sample naming a leader at or before that time."""
    rows = sorted((s for s in states if s.error is None), key=lambda s: s.time)
    before = [s for s in rows if s.time / 1e9 <= acked_at]
    if not before:
        return None
    at_ack = before[-1].partition(partition)
    leader = at_ack.leading
    if leader is None:
        return None
    after = rows[len(before) :]
    nxt = next((s for s in after if s.partition(partition).leading not in (None, leader)), None)
    return Handover(
        partition,
        leader,
        at_ack.isr,
        nxt.partition(partition).leading if nxt is not None else None,
        nxt.time / 1e9 if nxt is not None else None,
        rows[-1].time / 1e9,
    )


def sentence(h: Handover, who: str, first: float, last: float) -> str:
    """One sentence: which broker acknowledged `who` (e.g. "W1-W10"), acknowledged from
    `first` to `last` seconds, which took over and when."""
    when = f"at {first:.1f}s" if round(first, 1) == round(last, 1) else f"{first:.1f}-{last:.1f}s"
    isr = "alone in the ISR" if h.isr == (h.leader,) else f"with ISR {list(h.isr)}"
    if h.successor is None:
        after = f"no other broker led it up to the last sample ({h.last_sample:.1f}s)"
    else:
        after = f"broker {h.successor} took over by {h.took_over:.1f}s"
        if h.took_over is not None and h.took_over < last:
            after += ", before the last of them was acknowledged"
    were = "were" if "-" in who or "," in who else "was"
    return (
        f"Partition {h.partition}: broker {h.leader} led it, {isr}, when {who} {were} "
        f"acknowledged ({when}); {after}."
    )
