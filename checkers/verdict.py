"""From anomaly counts to a verdict.

Detection is separate from policy: the Spark jobs report every anomaly they
find; the run's allowed set decides which ones make the run invalid. Verdicts
compose as false > unknown > true.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

Valid = bool | Literal["unknown"]

# What each anomaly means; the Spark jobs implement these definitions.
DEFINITIONS: dict[str, str] = {
    "lost-write": "an acknowledged value never read, although some read of its partition "
    "reached an offset >= its acknowledged offset, or (no offset known, as with acks=0) "
    "although the final drain read its partition to the end",
    "unseen": "an acknowledged value never read that is not a lost-write",
    "vanished-read": "a value read by a consumer other than the final drain that the drain "
    "never read, although the drain read that partition at or beyond the value's offset "
    "(values sent in a transaction that did not commit are left out: the drain reads "
    "read_committed)",
    "duplicate": "a value observed at two or more distinct (topic, partition, offset) positions",
    "inconsistent-offsets": "one (topic, partition, offset) observed with two or more values",
    "unexpected": "a value read that no send ever attempted",
    "aborted-read": "a value read whose send's outcome is fail",
    "reorder": "within one process and (topic, partition), an acknowledged send invoked later "
    "holds a lower offset than one invoked earlier (adjacent pairs)",
    "int-nonmonotonic-send": "within one op, a later acknowledged send to a partition holds a "
    "lower offset than an earlier one (adjacent pairs)",
    "torn-txn": "a committed transaction of which the reads saw some values but not all",
    "precommitted-read": "a value that a txn op both sent and returned from its own poll "
    "micro-op: the transaction observed its own writes (any outcome of the op)",
    "nonmonotonic-poll": "a consumer process read an offset of a partition at or below the "
    "offset its previous read of that partition, in an earlier op of the same assignment, "
    "returned (adjacent pairs)",
    "int-nonmonotonic-poll": "within one op, a record of a partition at or below the offset "
    "of the record of that partition just before it (adjacent pairs)",
    "poll-skip": "a consumer process's read of a partition jumped, from its previous read of "
    "that partition in an earlier op of the same assignment, over an offset holding an "
    "acknowledged value",
    "int-poll-skip": "within one op, consecutive records of a partition jumped over an offset "
    "holding an acknowledged value",
    "group-missed": "an acknowledged value below the group's final committed offset that the "
    "group's application never processed",
    "group-redelivered": "a value the group's application processed more than once",
    "eos-output-lost": "an acknowledged input value the copier committed past that never "
    "appears in the output topic",
    "eos-output-duplicate": "an input value that appears more than once in the output topic",
}


def merge(verdicts: Iterable[Valid]) -> Valid:
    out: Valid = True
    for v in verdicts:
        if v is False:
            return False
        if v == "unknown":
            out = "unknown"
    return out


def decide(
    anomalies: Mapping[str, Mapping[str, Any]],
    allowed: Iterable[str],
    problems: Iterable[str] = (),
) -> dict[str, Any]:
    """anomalies: type -> {"count": int | None, ...}; None means the check crashed."""
    allowed_set = set(allowed)
    per_type: list[Valid] = []
    forbidden_seen: list[str] = []
    allowed_seen: list[str] = []
    unknown: list[str] = []
    for name, result in anomalies.items():
        count = result.get("count")
        if count is None:
            unknown.append(name)
            per_type.append(True if name in allowed_set else "unknown")
        elif count > 0 and name in allowed_set:
            allowed_seen.append(name)
        elif count > 0:
            forbidden_seen.append(name)
            per_type.append(False)
    problem_list = list(problems)
    if problem_list:
        per_type.append("unknown")
    return {
        "valid": merge(per_type),
        "forbidden_seen": sorted(forbidden_seen),
        "allowed_seen": sorted(allowed_seen),
        "allowed_not_seen": sorted(
            a for a in allowed_set if a in anomalies and anomalies[a].get("count") == 0
        ),
        "unknown": sorted(unknown),
        "problems": problem_list,
    }


def exit_code(valid: Valid) -> int:
    return 0 if valid is True else 1 if valid is False else 2
