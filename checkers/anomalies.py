"""The one anomaly registry: name, what a count counts, the definition, which runs
can show it, and what a witness proves in words.

Spec validation (`check.allowed`), the verdict, `results.json`, the report and the
README table all derive from it. The Spark job registers exactly one check per
name (`spark_analysis.facts.shared_frames.check`), and refuses to start if one is missing
(`spark_analysis.checks.runner`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Unit = Literal["values", "offsets", "pairs", "txns", "skips", "cycles"]
# What a witness rests on. "presence": records, offsets and outcomes the history holds,
# which no missing line can take back. "absence": something the history does not
# hold (a read, a send, an op or rebalance event between two reads), which a damaged
# line may be: while interior lines are damaged, such a finding is undecided.
Proof = Literal["presence", "absence"]
# The kind of client a check needs in a run to have anything to check.
Need = Literal["group", "copier", "transactions", "consumers", "reads", "app"]
NEED_WORDS: dict[Need, str] = {
    "group": "consumer group",
    "copier": "exactly-once copier",
    "app": "application on trial",
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
    proof: Proof = "presence"
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


_COMMITTED = (
    "a value that must have committed (acknowledged, or sent in a transaction that ended "
    "info of which the final drain read a value that no other op's send, not failed, also "
    "carried)"
)

_ALL = (
    Anomaly(
        "lost-write",
        "values",
        f"{_COMMITTED} that no read returned, where the history proves someone looked: a read "
        "of its partition returned an offset >= the value's, or the final drain read the "
        "partition to its end (an end beyond the value's offset: below the drain's end; at "
        "or below it: truncated; no offset known, as with acks=0: read to end)",
        proof="absence",
        reasons={
            "read past": "Reads of partition {partition} reached offset {max_read_offset}, "
            "past the acknowledged offset, so the value is not late: it is gone.",
            "below the drain's end": "The final drain read partition {partition} to its end "
            "at offset {drain_end}, beyond the acknowledged offset {offset}, and never "
            "returned the value: it is gone.",
            "truncated": "The final drain read this partition to its end at offset "
            "{drain_end}, at or below the acknowledged offset: the log was truncated after "
            "the acknowledgement.",
            "read to end": "No offset was ever known (acks=0), and the final drain read the "
            "partition to its end without finding it.",
        },
    ),
    Anomaly(
        "unseen",
        "values",
        f"{_COMMITTED} that no read returned, and not a lost-write: nothing read its "
        "partition past its offset and the final drain did not read that partition to its "
        "end, so late and lost look the same; it makes the verdict unknown, never invalid",
        proof="absence",
    ),
    Anomaly(
        "vanished-read",
        "values",
        "a value read by a consumer other than the final drain that the drain never read, "
        "although the drain returned a record at or beyond the value's offset or read the "
        "partition to its end (an end at or below the offset: read, then truncated away); "
        "values sent only in transactions not proven committed are left out: the drain reads "
        "read_committed",
        needs="consumers",
        proof="absence",
    ),
    Anomaly(
        "duplicate",
        "values",
        "a value observed at two or more distinct (topic, partition, offset) positions: in "
        "records any read returned (inside a transaction that did not commit too) or at the "
        "offset of a send that must have committed",
    ),
    Anomaly(
        "inconsistent-offsets",
        "offsets",
        "one (topic, partition, offset) observed with two or more values (observed as for "
        "duplicate)",
    ),
    Anomaly(
        "unexpected",
        "values",
        "a value read that no send ever attempted",
        proof="absence",
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
        "within one op, a later send to a partition sits at a lower offset than the one "
        "before it: its own offset if it must have committed, else where the version order "
        "(observed as for duplicate) holds its value (adjacent pairs)",
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
        "a transaction that must have committed (ok, or info with a value the final drain "
        "read) of which reads saw some values while another is a lost-write (a missing value"
        " that is only unseen makes the verdict unknown instead)",
        needs="transactions",
        proof="absence",
    ),
    Anomaly(
        "precommitted-read",
        "values",
        "a value that a txn op both sent and returned from its own poll micro-op: the "
        "transaction observed its own writes (any outcome of the op)",
        needs="transactions",
    ),
    Anomaly(
        "fenced-write",
        "values",
        "a value sent in a transaction of a fenced producer session, invoked after the fence"
        " completed, that was observed committed: an ok takeover of a transactional.id "
        "(nemesis op hijack-txn) names the session that held it (`client`, as its sends "
        "carry it), and that session's transaction, invoked after the takeover's completion,"
        " ended ok, or the final drain (read_committed) read the value and no other op's "
        "send, not failed, carried it; a transaction invoked before the fence may have "
        "committed and is not judged, nor is a consumer's read (consumers may read "
        "read_uncommitted)",
        needs="transactions",
        # "no other op's send carried it" is absence: a damaged line may hold that send.
        proof="absence",
        reasons={
            "committed": "Client {client} was fenced when the takeover of {transactional_id} "
            "completed (op {fence_index}), and its transaction invoked after that (op "
            "{index}) still ended ok: a fenced session committed.",
            "drain read": "Client {client} was fenced when the takeover of "
            "{transactional_id} completed (op {fence_index}), yet the final drain, reading "
            "read_committed, returned this value of its transaction invoked after that (op "
            "{index}), and no other send carried it: a fenced session's write committed.",
        },
    ),
    Anomaly(
        "nonmonotonic-poll",
        "pairs",
        "a consumer process read an offset of a partition at or below the offset its previous"
        " read of that partition, in an earlier op of the same assignment, returned (adjacent"
        " pairs; a poll during which the partition was assigned, revoked or lost is exempt)",
        needs="reads",
        proof="absence",
    ),
    Anomaly(
        "int-nonmonotonic-poll",
        "pairs",
        "within one op (its poll micro-ops in order), a record of a partition at or below the"
        " offset of the record of that partition just before it (adjacent pairs; a poll "
        "during which the partition was assigned, revoked or lost is exempt)",
        needs="reads",
        proof="absence",
    ),
    Anomaly(
        "poll-skip",
        "skips",
        "a consumer process's read of a partition jumped, from its previous read of that "
        "partition in an earlier op of the same assignment, over an offset known to hold a "
        "record (an acknowledged write's, or one any read returned, except a record of a "
        "transaction that never committed: read_committed readers skip those)",
        needs="reads",
        proof="absence",
    ),
    Anomaly(
        "int-poll-skip",
        "skips",
        "within one op (its poll micro-ops in order), consecutive records of a partition "
        "jumped over an offset known to hold a record (an acknowledged write's, or one any "
        "read returned, except a record of a transaction that never committed: "
        "read_committed readers skip those)",
        needs="reads",
        proof="absence",
    ),
    Anomaly(
        "group-missed",
        "values",
        f"{_COMMITTED}, below the group's final committed offset, that the group's "
        "application never processed",
        needs="group",
        proof="absence",
    ),
    Anomaly(
        "group-redelivered",
        "values",
        "a value the group's application processed more than once (each record of a process"
        " micro-op is one delivery: one op that processed it twice counts)",
        needs="group",
    ),
    Anomaly(
        "eos-output-lost",
        "values",
        f"an input {_COMMITTED.removeprefix('a ')} that the copier committed past and that "
        "never appears in the output topic",
        needs="copier",
        proof="absence",
    ),
    Anomaly(
        "eos-output-duplicate",
        "values",
        "an input value whose output appears at more than one position of the output topic "
        "(observed as for duplicate), whether or not the input was acknowledged or "
        "committed past",
        needs="copier",
    ),
    # The application on trial: a black box between the run's topic and
    # `{topic}-out`, each output record carrying the id of its input (the final
    # phase's output drain, poll micro-ops of role "app-output"). Its declared
    # guarantee allows some of these (checkers/app_guarantees.py).
    Anomaly(
        "app-output-lost",
        "values",
        f"an input {_COMMITTED.removeprefix('a ')}, below the application's group's "
        "committed offset, that no record of the application's output carries (an output "
        "not read to its end, or inputs at or above the committed offsets, make the verdict "
        "unknown instead)",
        needs="app",
        proof="absence",
        reasons={
            "committed past": "The application's group committed partition {partition} past "
            "offset {offset} (to {committed}), and no output record carries this value: "
            "the application consumed it and never produced its output.",
        },
    ),
    Anomaly(
        "app-output-duplicate",
        "values",
        "an input value (one some send attempted) that records of the application's output "
        "carry at two or more distinct (topic, partition, offset) positions",
        needs="app",
        reasons={
            "output twice": "The application's output carries this input {copies} times: "
            "it produced the output again, as a redelivery after a crash or rebalance does.",
        },
    ),
    Anomaly(
        "app-output-unexpected",
        "values",
        "an id that a record of the application's output carries and that no send ever "
        "attempted (a record with no recognisable id makes the verdict unknown instead)",
        needs="app",
        proof="absence",
        reasons={
            "never sent": "No send ever attempted this value, yet the application's output "
            "at {topic}/{partition}@{offset} carries it as its input's id.",
        },
    ),
    Anomaly(
        "app-output-reorder",
        "pairs",
        "in one partition of the application's output, the first outputs of two inputs of "
        "one key (the input's partition) that sit in the opposite order of their inputs' "
        "offsets (adjacent pairs in output order; a repeated output is a duplicate, not a "
        "reorder); allowed unless the application declares per-key order",
        needs="app",
        reasons={
            "key order": "Input {value} (offset {input_offset} of partition {key_partition}) "
            "was first output at {topic}/{partition}@{offset}, after input {prev_value} "
            "(offset {prev_input_offset}) at offset {prev_offset}: one key, and the outputs "
            "run the other way round from the inputs.",
        },
    ),
    Anomaly(
        "int-send-skip",
        "skips",
        "within one op, two consecutive sends to a partition sit at offsets with a third "
        "record known between them (observed as for duplicate): other clients' records "
        "interleave with an op's sends as a matter of course, so it is allowed by default, "
        "as in Jepsen",
        allowed_by_default=True,
    ),
    # Dependency cycles between ops (spark_analysis/cycles/edges.py), as Elle and
    # Jepsen's Kafka checker name them. Edges: ww, the writer of a committed value ->
    # the writer of the next one in its partition's version order; wr, the writer ->
    # every other op whose ok read returned it (a value with two possible writers
    # draws neither); process and realtime order as Elle defines them.
    Anomaly(
        "G0",
        "cycles",
        "a cycle of ww edges (the writer of a committed value -> the writer of the next "
        "committed value in that partition's version order), one per strongly connected "
        "component, witnessed by a shortest cycle: Kafka does not isolate writes, so "
        "concurrent transactions (and concurrent sends) interleave in a partition and "
        "reach different partitions in different orders, and a ww cycle is normal: "
        "allowed by default, as in Jepsen",
        allowed_by_default=True,
    ),
    Anomaly(
        "G1c",
        "cycles",
        "a cycle of wr edges (the writer of a committed value -> every other op whose ok "
        "read returned it): each op on it read what the next one wrote, which no "
        "read_committed history can show (a read_uncommitted reader can); ww edges are "
        "left out because Kafka's unisolated writes make T0 -ww-> T1 -wr-> T0 normal "
        "(Jepsen allows G1c whenever it infers ww edges); one per strongly connected "
        "component, witnessed by a shortest cycle",
        needs="transactions",
    ),
    Anomaly(
        "G1c-process",
        "cycles",
        "a cycle of wr edges and process order (consecutive ok ops of one process) that "
        "takes at least one process edge: a read returned what a later op of the reader's "
        "own process wrote, directly or through other reads, at any isolation level; one "
        "per strongly connected component (of the ops a wr edge touches), witnessed by a "
        "shortest cycle",
        needs="reads",
    ),
    Anomaly(
        "G1c-realtime",
        "cycles",
        "a cycle of wr edges and realtime order (an ok op that completed before another "
        "was invoked) that takes at least one realtime edge: a read returned what an op "
        "invoked only after the reading op completed wrote, directly or through other "
        "reads, at any isolation level; one per strongly connected component (of the ops "
        "a wr edge touches), witnessed by a shortest cycle",
        needs="reads",
    ),
)

ANOMALIES: dict[str, Anomaly] = {a.name: a for a in _ALL}
ANOMALY_TYPES: tuple[str, ...] = tuple(ANOMALIES)


DEFAULT_ALLOWED: tuple[str, ...] = tuple(a.name for a in _ALL if a.allowed_by_default)
ABSENCE: tuple[str, ...] = tuple(a.name for a in _ALL if a.proof == "absence")


def markdown_table() -> str:
    """The README's anomaly table, rendered from this registry."""
    rows = ["| type | counts | proven by | meaning |", "|---|---|---|---|"]
    rows += [f"| `{a.name}` | {a.unit} | {a.proof} | {a.definition} |" for a in _ALL]
    return "\n".join(rows)


def with_defaults(allowed: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """What a run allows: its own list, and what every run allows (`allowed_by_default`)."""
    return (*allowed, *(a for a in DEFAULT_ALLOWED if a not in allowed))
