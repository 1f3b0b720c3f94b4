"""The one anomaly registry: name, what a count counts, and the definition.

Spec validation (`check.allowed`), the verdict, `results.json`, the report and the
README table all derive from it. The Spark job registers exactly one check per
name (`spark_analysis.checks.check`), and refuses to start if one is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Unit = Literal["values", "offsets", "pairs", "txns", "skips"]


@dataclass(frozen=True)
class Anomaly:
    name: str
    unit: Unit  # what one counted instance is
    definition: str  # what the check finds, in one sentence


_ALL = (
    Anomaly(
        "lost-write",
        "values",
        "an acknowledged value never read, although some read of its partition reached an "
        "offset >= its acknowledged offset, or the final drain read its partition to the end "
        "(below the value's offset: truncated; no offset known, as with acks=0: read to end)",
    ),
    Anomaly(
        "unseen",
        "values",
        "an acknowledged value never read that is not a lost-write",
    ),
    Anomaly(
        "vanished-read",
        "values",
        "a value read by a consumer other than the final drain that the drain never read, "
        "although the drain read that partition at or beyond the value's offset (values sent "
        "in a transaction that did not commit are left out: the drain reads read_committed)",
    ),
    Anomaly(
        "duplicate",
        "values",
        "a value observed at two or more distinct (topic, partition, offset) positions",
    ),
    Anomaly(
        "inconsistent-offsets",
        "offsets",
        "one (topic, partition, offset) observed with two or more values",
    ),
    Anomaly(
        "unexpected",
        "values",
        "a value read that no send ever attempted",
    ),
    Anomaly(
        "aborted-read",
        "values",
        "a value read whose send's outcome is fail",
    ),
    Anomaly(
        "reorder",
        "pairs",
        "within one process and (topic, partition), an acknowledged send invoked later holds "
        "a lower offset than one invoked earlier (adjacent pairs)",
    ),
    Anomaly(
        "int-nonmonotonic-send",
        "pairs",
        "within one op, a later acknowledged send to a partition holds a lower offset than an"
        " earlier one (adjacent pairs)",
    ),
    Anomaly(
        "client-reorder",
        "pairs",
        "within one producer client (one librdkafka session, shared by several processes) "
        "and (topic, partition), an acknowledged send the client produced later holds a lower"
        " offset than the one it produced just before (adjacent pairs in produce() order)",
    ),
    Anomaly(
        "torn-txn",
        "txns",
        "a committed transaction of which the reads saw some values but not all",
    ),
    Anomaly(
        "precommitted-read",
        "values",
        "a value that a txn op both sent and returned from its own poll micro-op: the "
        "transaction observed its own writes (any outcome of the op)",
    ),
    Anomaly(
        "nonmonotonic-poll",
        "pairs",
        "a consumer process read an offset of a partition at or below the offset its previous"
        " read of that partition, in an earlier op of the same assignment, returned (adjacent"
        " pairs; a poll during which the partition was assigned, revoked or lost is exempt)",
    ),
    Anomaly(
        "int-nonmonotonic-poll",
        "pairs",
        "within one op, a record of a partition at or below the offset of the record of that "
        "partition just before it (adjacent pairs; a poll during which the partition was "
        "assigned, revoked or lost is exempt)",
    ),
    Anomaly(
        "poll-skip",
        "skips",
        "a consumer process's read of a partition jumped, from its previous read of that "
        "partition in an earlier op of the same assignment, over an offset known to hold a "
        "record (an acknowledged write's, or one any read returned, except a record of a "
        "transaction that never committed: read_committed readers skip those)",
    ),
    Anomaly(
        "int-poll-skip",
        "skips",
        "within one op, consecutive records of a partition jumped over an offset known to "
        "hold a record (an acknowledged write's, or one any read returned, except a record "
        "of a transaction that never committed: read_committed readers skip those)",
    ),
    Anomaly(
        "group-missed",
        "values",
        "an acknowledged value below the group's final committed offset that the group's "
        "application never processed",
    ),
    Anomaly(
        "group-redelivered",
        "values",
        "a value the group's application processed more than once",
    ),
    Anomaly(
        "eos-output-lost",
        "values",
        "an acknowledged input value the copier committed past that never appears in the "
        "output topic",
    ),
    Anomaly(
        "eos-output-duplicate",
        "values",
        "an input value that appears more than once in the output topic",
    ),
)

ANOMALIES: dict[str, Anomaly] = {a.name: a for a in _ALL}
ANOMALY_TYPES: tuple[str, ...] = tuple(ANOMALIES)


def markdown_table() -> str:
    """The README's anomaly table, rendered from this registry."""
    rows = ["| type | counts | meaning |", "|---|---|---|"]
    rows += [f"| `{a.name}` | {a.unit} | {a.definition} |" for a in _ALL]
    return "\n".join(rows)


# An anomaly that, allowed, brings these along: the same event seen by another check.
# A reorder within one send op (adjacent sends of one process) is also an
# int-nonmonotonic-send; a config that accepts reorders must accept both. A process's
# sends all go through one client, in its produce() order, so where sends record
# their client, a reorder of either kind is also a client-reorder.
COMPANIONS: dict[str, tuple[str, ...]] = {
    "reorder": ("int-nonmonotonic-send", "client-reorder"),
    "int-nonmonotonic-send": ("client-reorder",),
}


def with_companions(allowed: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    out = list(allowed)
    for a in allowed:
        out += [c for c in COMPANIONS.get(a, ()) if c not in out]
    return tuple(out)
