"""The parts of the application's containers that need no Docker engine: the refusal
of an image the engine lacks, the lane routes and the bootstrap a container gets, the
cut of a lane (against a stand-in of Toxiproxy's API), the engine states an instance
reads back, and the order leftovers are removed in. The engine's own part is
tests/integration/test_app_containers.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from docker.errors import APIError, ImageNotFound
from kafka_trial.cluster import leftovers
from kafka_trial.cluster.app_containers import (
    AppContainer,
    container_env,
    forward_proxies,
    require_local_image,
)
from kafka_trial.cluster.brokers import Broker
from kafka_trial.cluster.facade import Cluster
from kafka_trial.cluster.images import Images
from kafka_trial.cluster.naming import CUT_TOXICS, LABEL_ROLE
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.cluster.toxiproxy import Toxic
from kafka_trial.contracts.errors import TrialError


class _NoImages:
    def get(self, name: str) -> None:
        raise ImageNotFound(f"No such image: {name}")


@dataclass
class _Engine:
    images: Any = field(default_factory=_NoImages)


def test_an_image_the_engine_lacks_is_refused_in_one_line() -> None:
    with pytest.raises(TrialError) as e:
        require_local_image(_Engine(), "shop/app:1")  # type: ignore[arg-type]
    assert e.value.one_line() == (
        "kafka-trial: image shop/app:1 is not in the local Docker engine -- fix: "
        "build it first (docker build -t shop/app:1 ...)"
    )


@dataclass
class _Toxi:
    """Toxiproxy's API as the sidecar answers it: proxies, enabled, toxics."""

    proxies_: dict[str, dict[str, Any]] = field(default_factory=dict)
    stuck: bool = False  # a proxy that does not take the change

    def proxies(self) -> dict[str, dict[str, Any]]:
        return {n: dict(p, toxics=list(p["toxics"])) for n, p in self.proxies_.items()}

    def set_enabled(self, name: str, enabled: bool) -> None:
        if not self.stuck:
            self.proxies_[name]["enabled"] = enabled

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        return list(self.proxies_[proxy]["toxics"])

    def add_toxic(self, proxy: str, toxic: Toxic) -> None:
        self.proxies_[proxy]["toxics"].append({"name": toxic.name})

    def remove_toxic(self, proxy: str, name: str) -> None:
        p = self.proxies_[proxy]
        p["toxics"] = [t for t in p["toxics"] if t["name"] != name]


def _cluster(lanes: int = 3) -> Cluster:
    """A Cluster over brokers whose sidecars are stand-ins: no engine is asked."""
    spec = ClusterSpec(client_lanes=lanes)
    cluster = Cluster(None, spec, Images("k", "t", "4.0"), run_id="r1")  # type: ignore[arg-type]
    for j in (1, 2, 3):
        names = ["client"] + [f"client-{k}" for k in range(1, lanes)]
        toxi = _Toxi({n: {"enabled": True, "toxics": []} for n in names})
        ports = tuple(40000 + 10 * j + k for k in range(lanes))
        cluster.brokers[j] = Broker(j, None, None, toxi, ports)  # type: ignore[arg-type]
    return cluster


def test_a_lane_is_reached_in_network_through_each_broker_s_lane_proxy() -> None:
    c = _cluster()
    assert c.bootstrap_in_network(2) == "kafka-1:19094,kafka-2:19094,kafka-3:19094"
    assert c.lane_routes(2) == [
        ("127.0.0.1:40012", "kafka-1:19094"),
        ("127.0.0.1:40022", "kafka-2:19094"),
        ("127.0.0.1:40032", "kafka-3:19094"),
    ]
    # The host's bootstrap names the addresses the sidecar forwards.
    assert c.bootstrap_for(2) == ",".join(listen for listen, _ in c.lane_routes(2))
    assert forward_proxies(c.lane_routes(2))[0] == {
        "name": "to-kafka-1",
        "listen": "127.0.0.1:40012",
        "upstream": "kafka-1:19094",
    }
    env = container_env({"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "GROUP_ID": "g"}, "kafka-1:1")
    assert env == {"KAFKA_BOOTSTRAP_SERVERS": "kafka-1:1", "GROUP_ID": "g"}


def test_cut_lane_disables_that_lane_on_every_broker_and_restore_enables_it() -> None:
    c = _cluster()
    assert c.cut_lane(1) == {"lane": 1, "brokers": [1, 2, 3], "mode": "reject"}
    for b in c.brokers.values():
        ps = b.toxi.proxies()
        assert not ps["client-1"]["enabled"]
        assert ps["client"]["enabled"] and ps["client-2"]["enabled"], "other lanes untouched"
    assert c.restore_lane(1) == {"lane": 1, "brokers": [1, 2, 3]}
    assert all(b.toxi.proxies()["client-1"]["enabled"] for b in c.brokers.values())


def test_a_drop_cut_of_a_lane_is_read_back_from_its_toxics() -> None:
    c = _cluster()
    c.cut_lane(2, "drop")
    toxics = {t["name"] for t in c.brokers[3].toxi.proxies()["client-2"]["toxics"]}
    assert toxics == set(CUT_TOXICS)
    c.restore_lane(2)
    assert c.brokers[3].toxi.proxies()["client-2"]["toxics"] == []


def test_a_lane_cut_a_proxy_did_not_take_raises() -> None:
    c = _cluster()
    c.brokers[2].toxi.stuck = True  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match=r"client lane 1 still passes to brokers \[2\]"):
        c.cut_lane(1)


@dataclass
class _Box:
    """A container as the engine reports it."""

    status: str = "running"
    attrs: dict[str, Any] = field(default_factory=lambda: {"State": {"Running": True}})
    short_id: str = "c0ffee"
    id: str = "c0ffee" * 10
    name: str = "kt-r1-app-0"
    kill_takes: bool = True
    # Reads after a pause that still show "running": the engine's word trails the
    # freezer (seen in a fresh-clone CI).
    pause_lags: int = 0
    calls: list[str] = field(default_factory=list)
    _lagging: int = 0

    def reload(self) -> None:
        if self._lagging:
            self._lagging -= 1
            if not self._lagging:
                self.status = "paused"

    def _end(self, code: int) -> None:
        self.status = "exited"
        self.attrs = {"State": {"Running": False, "ExitCode": code}}

    def kill(self, signal: str) -> None:
        self.calls.append(f"kill {signal}")
        if self.kill_takes:
            self._end(137)

    def stop(self, timeout: int) -> None:
        self.calls.append(f"stop {timeout}")
        self._end(143)

    def pause(self) -> None:
        self._lagging = self.pause_lags
        if not self._lagging:
            self.status = "paused"

    def unpause(self) -> None:
        if self.status != "paused":  # as the engine answers
            raise APIError(f"Container {self.id} is not paused")
        self.status = "running"

    def logs(self, stdout: bool, stderr: bool) -> bytes:
        return b"out\n" if stdout else b"err: boom\n"


def _instance(tmp_path: Path, box: _Box) -> AppContainer:
    return AppContainer(
        0,
        box,
        _cluster(),
        2,
        tmp_path / "i.out",
        tmp_path / "i.err",
        2.5,  # type: ignore[arg-type]
    )


def test_an_instance_reads_back_each_state_it_was_put_in(tmp_path: Path) -> None:
    box = _Box()
    app = _instance(tmp_path, box)
    assert app.describe() == {"instance": 0, "container": "c0ffee"}
    assert app.pause() == {"was": "running", "state": "paused"} and app.running()
    assert app.resume() == {"state": "running"}
    assert app.terminate("app-restart") == {"state": "running", "after": "exited", "exit_code": 143}
    assert box.calls == ["stop 3"] and app.ended_by == "app-restart"
    assert not app.running() and app.exit_code() == 143
    # Its output is appended once, when it has ended.
    app.collect_logs()
    assert (tmp_path / "i.out").read_text() == "out\n"
    assert app.stderr_tail() == "err: boom\n"
    with pytest.raises(RuntimeError, match="is exited"):
        app.kill("app-kill")
    assert app.resume() == {"state": "exited"}, "nothing to resume is no error"


def test_a_pause_is_read_back_until_the_engine_shows_it(tmp_path: Path) -> None:
    box = _Box(pause_lags=3)
    app = _instance(tmp_path, box)
    assert app.pause() == {"was": "running", "state": "paused"}


def test_a_kill_the_engine_did_not_carry_out_shows_in_what_it_returns(
    tmp_path: Path, monkeypatch
) -> None:
    from kafka_trial.cluster import app_containers

    monkeypatch.setattr(app_containers, "KILL_WAIT_S", 0.1)
    app = _instance(tmp_path, _Box(kill_takes=False))
    assert app.kill("app-kill") == {"state": "running", "after": "running", "exit_code": None}
    assert app.running()  # the fault sees it and ends info (test_nemesis_app.py)


@dataclass
class _Listed:
    labels: dict[str, str]


class _Lister:
    def __init__(self, found: list[_Listed]) -> None:
        self.found = found

    def list(self, **kw: Any) -> list[_Listed]:
        return list(self.found)


def test_instances_and_brokers_go_before_the_sidecars_whose_namespace_they_use() -> None:
    found = [_Listed({LABEL_ROLE: r}) for r in ("app-net", "proxy", "app", "broker", "network")]
    client = type("C", (), {"containers": _Lister(found)})()
    got = leftovers._containers(client, "kafka-trial", first=("broker", "app"))  # type: ignore[arg-type]
    assert [c.labels[LABEL_ROLE] for c in got][:2] == ["app", "broker"]
