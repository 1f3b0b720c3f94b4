"""The native parse that follows a history as the run writes it (follow_parse): the
same rows as parsing the final file, and used only when the bytes it parsed are
exactly the final file's."""

from __future__ import annotations

import random
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from kafka_trial.spark_analysis.job import analyze
from kafka_trial.spark_analysis.read import columnar
from kafka_trial.spark_analysis.read.follow_parse import Followed, Follower, file_sha256, follow
from kafka_trial.spark_analysis.read.native_parse import to_parquet

from tests import random_histories
from tests.histories import Builder

pytestmark = pytest.mark.filterwarnings("ignore")


def _rows(parquet: Path) -> list[dict[str, Any]]:
    return pq.read_table(parquet).to_pylist()


def _history(tmp: Path, seed: int = 1) -> bytes:
    path = tmp / f"source-{seed}.jsonl"
    random_histories.write([random_histories.history(seed, i) for i in range(30)], path)
    return path.read_bytes()


def _append_in_pieces(path: Path, data: bytes, rng: random.Random, done: threading.Event) -> None:
    """The writer's way: appends cut anywhere, mid-line included, with pauses."""
    with path.open("ab") as fh:
        i = 0
        while i < len(data):
            n = rng.randint(1, 4000)
            fh.write(data[i : i + n])
            fh.flush()
            i += n
            if rng.random() < 0.05:
                time.sleep(0.01)
    done.set()


@pytest.mark.parametrize("last_newline", [True, False])
def test_following_a_growing_file_gives_the_rows_of_the_final_file(
    tmp_path: Path, last_newline: bool
) -> None:
    data = _history(tmp_path)
    if not last_newline:
        data = data.rstrip(b"\n")  # a last line without its newline is parsed too
    hist = tmp_path / "history.jsonl"
    hist.write_bytes(b"")
    done = threading.Event()
    writer = threading.Thread(target=_append_in_pieces, args=(hist, data, random.Random(7), done))
    writer.start()
    got = follow(hist, tmp_path / "followed.parquet", lambda t: done.wait(t))
    writer.join()
    assert (got["size"], got["sha256"]) == file_sha256(hist)
    want = to_parquet(hist, tmp_path / "whole.parquet")
    assert got["rows"] == want and want
    assert _rows(tmp_path / "followed.parquet") == _rows(tmp_path / "whole.parquet")


def test_the_follower_process_parses_what_is_appended_until_told_final(tmp_path: Path) -> None:
    data = _history(tmp_path, seed=2)
    hist = tmp_path / "history.jsonl"
    hist.write_bytes(data[: len(data) // 3])
    f = Follower(hist, tmp_path / "f.parquet")
    with hist.open("ab") as fh:
        fh.write(data[len(data) // 3 :])
    got = f.finish(120)
    assert got is not None and got.rows is not None
    assert (got.size, got.sha256) == file_sha256(hist)
    assert got.rows == to_parquet(hist, tmp_path / "whole.parquet")
    assert _rows(got.out) == _rows(tmp_path / "whole.parquet")


def test_a_follower_whose_run_went_away_stops_and_leaves_nothing(tmp_path: Path) -> None:
    hist = tmp_path / "history.jsonl"
    hist.write_bytes(_history(tmp_path))
    f = Follower(hist, tmp_path / "f.parquet")
    proc = f._proc
    assert proc.stdin is not None
    time.sleep(0.5)
    proc.stdin.close()  # as when the run's process exits without asking for the rows
    assert proc.wait(60) == 0
    assert not (tmp_path / "f.parquet").exists()


def test_a_follower_ignores_ctrl_c_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    hist = tmp_path / "history.jsonl"
    hist.write_bytes(_history(tmp_path))
    out = tmp_path / "f.parquet"
    f = Follower(hist, out)
    deadline = time.monotonic() + 60
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.exists()  # it is following, its file open
    # Ctrl-C reaches the whole process group; the run heals first, so this waits on.
    f._proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert f._proc.poll() is None
    f._proc.send_signal(signal.SIGTERM)
    assert f._proc.wait(60) == 128 + signal.SIGTERM
    assert not out.exists()


def test_a_damaged_line_makes_the_follower_decline(tmp_path: Path) -> None:
    hist = tmp_path / "history.jsonl"
    hist.write_bytes(_history(tmp_path) + b'{"index": 1, "type": \n')
    got = Follower(hist, tmp_path / "f.parquet").finish(120)
    assert got is not None and got.rows is None
    assert not (tmp_path / "f.parquet").exists()


class _Fake:
    """A follower whose result is given: what `prepare` does with rows of some bytes."""

    def __init__(self, followed: Followed) -> None:
        self.followed = followed
        self.abandoned = False

    def finish(self, timeout_s: float) -> Followed:
        return self.followed

    def abandon(self) -> None:
        self.abandoned = True


def _planted(tmp_path: Path, of: bytes) -> _Fake:
    """Rows the follower made of `of`, as if it had read those bytes."""
    src = tmp_path / "seen.jsonl"
    src.write_bytes(of)
    out = tmp_path / "seen.parquet"
    rows = to_parquet(src, out)
    size, sha = file_sha256(src)
    return _Fake(Followed(rows, size, sha, out, 0.1))


def _prepare_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, seen: bytes
) -> tuple[Path, _Fake, columnar.Prepared]:
    """history.jsonl holds `data`; a follower parsed `seen`; then `prepare` runs."""
    hist = tmp_path / "run" / "history.jsonl"
    hist.parent.mkdir()
    hist.write_bytes(data)
    fake = _planted(tmp_path, seen)
    monkeypatch.setattr(columnar, "_take_follower", lambda h: fake)
    return hist, fake, columnar.prepare(hist)


def test_rows_of_other_bytes_than_the_final_file_s_are_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Planted: the follower parsed a history whose middle was rewritten afterwards
    # (same size, same ends: the cache's fingerprint alone would not see it).
    data = _history(tmp_path)
    # A follower's rows of different bytes of the same size.
    other = bytearray(data)
    m = re.compile(rb'"offset": ?(\d)').search(data, len(data) // 2)
    assert m is not None
    pos = m.start(1)
    other[pos] = ord("9") if other[pos] != ord("9") else ord("8")
    hist, fake, prep = _prepare_with(tmp_path, monkeypatch, data, bytes(other))
    assert fake.followed.rows and fake.followed.size == len(data)
    assert not prep.followed and prep.native in ("written", "temp")
    assert fake.abandoned
    made = prep.temp / "part-00000.snappy.parquet" if prep.temp else None
    parquet = made or next((hist.parent / columnar.CACHE).glob("*.parquet"))
    assert _rows(parquet) != _rows(fake.followed.out)  # the file's rows, not the follower's
    assert to_parquet(hist, tmp_path / "want.parquet")
    assert _rows(parquet) == _rows(tmp_path / "want.parquet")


def test_rows_of_exactly_the_final_file_s_bytes_are_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The clean twin: the same bytes, so the follower's rows stand.
    data = _history(tmp_path)
    _, fake, prep = _prepare_with(tmp_path, monkeypatch, data, data)
    assert prep.followed and prep.native in ("written", "temp")
    assert not fake.followed.out.exists()  # moved into place, not parsed again


def test_an_analysis_takes_a_followed_parse_with_the_same_verdict(spark, tmp_path: Path) -> None:
    def lossy(run: Path) -> Path:
        b = Builder(run)
        b.sends(0, [(1, 0, 0, "ok"), (2, 0, 1, "ok"), (3, 0, 2, "ok")])
        b.drain(1, [(1, 0, 0), (3, 0, 2)], at_end={0: 2})
        return b.done()

    plain = analyze(lossy(tmp_path / "plain"))
    run = lossy(tmp_path / "followed")
    columnar.follow(run / "history.jsonl")
    followed = analyze(run)
    assert followed.analysis.parsed_during_run and not plain.analysis.parsed_during_run
    assert followed.analysis.parser == plain.analysis.parser == "native"
    assert followed.valid is plain.valid is False
    assert {n: a.count for n, a in followed.anomalies.items()} == {
        n: a.count for n, a in plain.anomalies.items()
    }
    assert followed.anomalies["lost-write"].count == 1
    assert not list(run.glob(".history.parquet.follow.*"))
