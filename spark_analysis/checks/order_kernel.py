"""app-output-reorder as one vectorised function per output partition: the inputs'
first outputs there (value_kernel.py's APP_FIRST rows, each with where its input
sits), per key (input partition) in output order, and each adjacent pair whose
inputs sit the other way round. Later outputs of an input are redeliveries
(app-output-duplicate), not reorders.

As the other kernels, this runs in Spark's Python workers, shipped by value
(value_pass.py registers it), and imports nothing of kafka_trial but
kernel_columns.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from kafka_trial.spark_analysis.checks.kernel_columns import (
    NULL,
    codes,
    longs,
    out_table,
    py,
    to_json,
)

# An APP_FIRST row's fields, as value_kernel.py writes them.
FIRST_SCHEMA = (
    "topic string, partition long, offset long, value long, key_topic string, "
    "key_partition long, input_offset long"
)


def reorders(t: pa.Table) -> pa.Table:
    """One output partition's first outputs: its app-output-reorder rows."""
    key_topic, key_part = codes(t["key_topic"]), longs(t, "key_partition")
    off, val, inp = longs(t, "offset"), longs(t, "value"), longs(t, "input_offset")
    # Per key, in output order (offset, then value), as the query's window ordered.
    order = np.lexsort([val, off, key_part, key_topic])
    same_key = (key_topic[order][1:] == key_topic[order][:-1]) & (
        key_part[order][1:] == key_part[order][:-1]
    )
    prev, cur = order[:-1], order[1:]
    back = same_key & (inp[prev] != NULL) & (inp[cur] != NULL) & (inp[prev] > inp[cur])
    rows: list[tuple[str, str, str]] = []
    cols = {c: t[c].to_pylist() for c in ("topic", "partition", "key_topic", "key_partition")}
    for a, b in zip(prev[back].tolist(), cur[back].tolist(), strict=True):
        row: dict[str, Any] = {
            "topic": cols["topic"][b],
            "partition": cols["partition"][b],
            "key_topic": cols["key_topic"][b],
            "key_partition": cols["key_partition"][b],
            "prev_value": py(val[a]),
            "prev_offset": py(off[a]),
            "prev_input_offset": py(inp[a]),
            "value": py(val[b]),
            "offset": py(off[b]),
            "input_offset": py(inp[b]),
            "reason": "key order",
        }
        detail = to_json(row)
        rows.append(("app-output-reorder", detail, detail))
    return out_table(rows)
