"""The one anomaly registry: name, what a count counts, the definition, which runs
can show it, and what a witness proves in words.

Spec validation (`check.allowed`), the verdict, `results.json`, the report and the
README table all derive from it. The Spark job registers exactly one check per
name (`spark_analysis.shared_frames.check`), and refuses to start if one is missing
(`spark_analysis.queue_checks`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Unit = Literal["values", "offsets", "pairs", "txns", "skips"]
# The kind of client a check needs in a run to have anything to check.
Need = Literal["group", "copier", "transactions", "consumers", "reads"]
NEED_WORDS: dict[Need, str] = {
    "group": "consumer group",
    "copier": "exactly-once copier",
    "transactions": "transactions",
    "consumers": "consumers besides the final drain",
    "reads": "reads",
}


@dataclass(frozen=True)
class Anomaly:
    name: str
    unit: Unit  # what one counted instance is
    definition: str  # what the check finds, in one sentence
    needs: Need | None = None  # None: every run can show it
    # Normal behaviour worth seeing (Jepsen allows it too): never makes a run invalid.
    allowed_by_default: bool = False
    # A witness's `reason` field -> the sentence that says what it proves, with the
    # witness's fields in braces.
    reasons: Mapping[str, str] = field(default_factory=dict)

    def applicable(self, present: set[Need]) -> bool:
        """Whether a run with these kinds of client has anything for this check."""
        return self.needs is None or self.needs in present

    def explain(self, witness: Mapping[str, Any]) -> str | None:
        """What the witness proves, in words, if its reason has any."""
        template = self.reasons.get(str(witness.get("reason")))
        if template is None:
            return None
        return template.format_map({k: witness.get(k, "?") for k in _fields(template)})


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


_ALL = (
    Anomaly(
        "lost-write",
        "values",
        "an acknowledged value never read, although some read of its partition reached an "
        "offset >= its acknowledged offset, or the final drain read its partition to the end "
        "(below the value's offset: truncated; no offset known, as with acks=0: read to end)",
        reasons={
            "read past": "Reads of partition {partition} reached offset {max_read_offset}, "
            "past the acknowledged offset, so the value is not late: it is gone.",
            "truncated": "The final drain read this partition to its end, below the "
            "acknowledged offset: the log was truncated after the acknowledgement.",
            "read to end": "No offset was ever known (acks=0), and the final drain read the "
            "partition to its end without finding it.",
        },
    ),
    Anomaly(
        "unseen",
        "values",
        "an acknowledged value never read that is not a lost-write: nothing read its "
        "partition past its offset and the final drain did not read that partition to its "
        "end, so late and lost look the same; it makes the verdict unknown, never invalid, "
        "and names the partitions the drain did not finish and why",
    ),
    Anomaly(
        "vanished-read",
        "values",
        "a value read by a consumer other than the final drain that the drain never read, "
        "although the drain read that partition at or beyond the value's offset (values sent "
        "in a transaction that did not commit are left out: the drain reads read_committed)",
        needs="consumers",
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
    Anomaly("aborted-read", "values", "a value read whose send's outcome is fail", needs="reads"),
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
        needs="transactions",
    ),
    Anomaly(
        "precommitted-read",
        "values",
        "a value that a txn op both sent and returned from its own poll micro-op: the "
        "transaction observed its own writes (any outcome of the op)",
        needs="transactions",
    ),
    Anomaly(
        "nonmonotonic-poll",
        "pairs",
        "a consumer process read an offset of a partition at or below the offset its previous"
        " read of that partition, in an earlier op of the same assignment, returned (adjacent"
        " pairs; a poll during which the partition was assigned, revoked or lost is exempt)",
        needs="reads",
    ),
    Anomaly(
        "int-nonmonotonic-poll",
        "pairs",
        "within one op, a record of a partition at or below the offset of the record of that "
        "partition just before it (adjacent pairs; a poll during which the partition was "
        "assigned, revoked or lost is exempt)",
        needs="reads",
    ),
    Anomaly(
        "poll-skip",
        "skips",
        "a consumer process's read of a partition jumped, from its previous read of that "
        "partition in an earlier op of the same assignment, over an offset known to hold a "
        "record (an acknowledged write's, or one any read returned, except a record of a "
        "transaction that never committed: read_committed readers skip those)",
        needs="reads",
    ),
    Anomaly(
        "int-poll-skip",
        "skips",
        "within one op, consecutive records of a partition jumped over an offset known to "
        "hold a record (an acknowledged write's, or one any read returned, except a record "
        "of a transaction that never committed: read_committed readers skip those)",
        needs="reads",
    ),
    Anomaly(
        "group-missed",
        "values",
        "an acknowledged value below the group's final committed offset that the group's "
        "application never processed",
        needs="group",
    ),
    Anomaly(
        "group-redelivered",
        "values",
        "a value the group's application processed more than once",
        needs="group",
    ),
    Anomaly(
        "eos-output-lost",
        "values",
        "an acknowledged input value the copier committed past that never appears in the "
        "output topic",
        needs="copier",
    ),
    Anomaly(
        "eos-output-duplicate",
        "values",
        "an input value that appears more than once in the output topic",
        needs="copier",
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
