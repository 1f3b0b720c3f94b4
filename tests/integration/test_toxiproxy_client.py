"""The typed Toxiproxy client and Link verbs against a real Toxiproxy server."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from kafka_trial.cluster.images import toxiproxy_binary
from kafka_trial.cluster.links import Link
from kafka_trial.cluster.naming import CUT_TOXICS
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.cluster.toxiproxy import Toxic, ToxiproxyClient, ToxiproxyError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def toxi() -> Iterator[ToxiproxyClient]:
    port = _free_port()
    server = subprocess.Popen(
        [
            str(toxiproxy_binary(ClusterSpec().toxiproxy_version)),
            "-host",
            "127.0.0.1",
            "-port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout_s=2)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client.version()
                break
            except ToxiproxyError:
                assert time.monotonic() < deadline, "toxiproxy did not start"
                time.sleep(0.1)
        client.create_proxy("to-2-internal", f"127.0.0.1:{_free_port()}", "127.0.0.1:9")
        yield client
    finally:
        server.terminate()
        server.wait(10)


def names(toxi: ToxiproxyClient) -> set[str]:
    return {t["name"] for t in toxi.toxics("to-2-internal")}


def test_cut_drop_one_direction_and_uncut_keeps_other_toxics(toxi: ToxiproxyClient) -> None:
    link = Link(1, 2, "internal", toxi)
    link.add_toxic(Toxic("kt-latency", "latency", "downstream", {"latency": 100}))
    link.cut("drop", ("upstream",))
    assert names(toxi) == {"kt-latency", CUT_TOXICS[0]}
    link.cut("drop")  # idempotent, and adds the other direction
    assert names(toxi) == {"kt-latency", *CUT_TOXICS}
    link.uncut()
    assert names(toxi) == {"kt-latency"}
    link.heal()
    assert names(toxi) == set()


def test_reject_disables_and_heal_enables(toxi: ToxiproxyClient) -> None:
    link = Link(1, 2, "internal", toxi)
    link.cut("reject")
    assert toxi.proxies()["to-2-internal"]["enabled"] is False
    link.uncut()
    assert toxi.proxies()["to-2-internal"]["enabled"] is True


def test_reset_heals_everything(toxi: ToxiproxyClient) -> None:
    link = Link(1, 2, "internal", toxi)
    link.cut("drop")
    link.cut("reject")
    toxi.reset()
    assert names(toxi) == set()
    assert toxi.proxies()["to-2-internal"]["enabled"] is True


def test_errors_are_typed_and_fast() -> None:
    dead = ToxiproxyClient(f"http://127.0.0.1:{_free_port()}", timeout_s=1)
    t0 = time.monotonic()
    with pytest.raises(ToxiproxyError):
        dead.proxies()
    assert time.monotonic() - t0 < 5


def test_http_errors_name_the_call(toxi: ToxiproxyClient) -> None:
    with pytest.raises(ToxiproxyError, match="HTTP 404"):
        toxi.remove_toxic("to-2-internal", "no-such-toxic")
