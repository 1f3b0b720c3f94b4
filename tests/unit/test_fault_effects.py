"""What the report says each fault did: the nemesis packages' completions read back
in one line (nemesis/effects.py), for every storage and clock fault."""

from __future__ import annotations

from kafka_trial.nemesis.effects import effect


def test_power_loss_names_what_each_broker_lost_and_what_it_could_not_crash() -> None:
    v = {
        "brokers": [1],
        "lost": {"1": {"files": 2, "bytes": 4096}},
        "not_crashed": {"2": "broker 2 is paused"},
    }
    assert effect("power-loss", "ok", v) == (
        "broker 1: lost 2 files, 4096 B never fsynced; broker 2 not crashed: broker 2 is paused"
    )


def test_corrupt_names_the_file_the_bytes_and_the_offsets() -> None:
    flip = {"file": "t-0/0.log", "mode": "bitflip", "bytes": [10, 90], "flipped_bits": 8}
    cut = {"file": "t-0/0.log", "mode": "truncate", "bytes": [50, 99], "size_before": 100}
    v = {"corrupted": {"1": flip | {"offsets": [3, 7]}, "2": cut | {"size_after": 50}}}
    assert effect("corrupt", "ok", v) == (
        "broker 1: t-0/0.log: 8 bits flipped in bytes 10-90, offsets 3-7; "
        "broker 2: t-0/0.log: cut from byte 50 (100 -> 50 B), no whole batch"
    )


def test_clock_says_what_was_measured_not_only_what_was_asked() -> None:
    v = {
        "clock": {"1": {"asked_s": 120, "offset_s": 119.997}, "2": {"min_s": 0.0, "max_s": 60.0}},
        "missed": {"3": {"asked_s": 120, "offset_s": 0.0}},
    }
    assert effect("clock", "ok", v) == (
        "broker 1: measured +119.997 s (asked +120 s); broker 2: strobed, measured +0.0 s "
        "to +60.0 s; broker 3's clock did not show it"
    )


def test_disk_free_and_the_election_after_a_lone_leader_lost_power() -> None:
    freed = {"freed": {"1": {"refused_writes": 7, "refused_bytes": 0, "halted": True}}}
    assert effect("disk-free", "ok", freed) == (
        "broker 1: 7 writes (0 B) refused, had halted (started again)"
    )
    won = {"leader": 3, "old_leader": 1, "elected": True, "elected_after_s": 8.1}
    assert effect("await-leader", "ok", won) == "leader 3 elected 8.1 s after the old leader 1 went"
    none = {"leader": None, "isr": [1], "old_leader": 1, "elected": False}
    assert effect("await-leader", "ok", none) == "no other leader (leader None, ISR [1])"


def test_an_op_that_did_nothing_says_why_and_a_plain_one_says_nothing() -> None:
    assert effect("clock", "info", None, "no broker's clock took").startswith("did not take")
    assert effect("kill", "ok", {"brokers": [1]}) == ""
