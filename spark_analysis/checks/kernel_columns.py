"""What both kernels (partition_kernel.py, value_kernel.py) read their Arrow columns
with and write their rows as. Like them it runs in Spark's Python workers, shipped by
value, so it imports nothing of kafka_trial."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

OUT_SCHEMA = "type string, key string, detail string"
OUT = pa.schema([("type", pa.string()), ("key", pa.string()), ("detail", pa.string())])
NULL = np.iinfo(np.int64).min  # a null long, in the int64 arrays the kernels work on


def to_json(row: dict[str, Any]) -> str:
    """A row as Spark's to_json writes a struct: compact, nulls left out."""
    return json.dumps(
        {k: v for k, v in row.items() if v is not None}, separators=(",", ":"), ensure_ascii=False
    )


def long_array(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(col, NULL).to_numpy(zero_copy_only=False), dtype=np.int64)


def flag_array(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(col, False).to_numpy(zero_copy_only=False), dtype=bool)


def longs(t: pa.Table, name: str) -> np.ndarray:
    return long_array(t[name])


def flags(t: pa.Table, name: str) -> np.ndarray:
    return flag_array(t[name])


def py(x: Any) -> Any:
    """A numpy scalar as JSON writes it; the null sentinel as None."""
    if isinstance(x, np.integer):
        return None if x == NULL else int(x)
    return x


def codes(col: pa.ChunkedArray) -> np.ndarray:
    """Strings as integers, equal for equal strings (null its own code)."""
    enc = pc.fill_null(col, "\x00null").dictionary_encode().combine_chunks()
    return np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def scalar(x: Any) -> Any:
    return x.as_py() if isinstance(x, pa.Scalar) else x


def out_table(rows: list[tuple[str, str, str]]) -> pa.Table:
    """(type, key, detail) rows as the table a kernel returns."""
    return pa.Table.from_arrays(
        [pa.array([r[i] for r in rows], pa.string()) for i in range(3)], schema=OUT
    )
