"""What a recorded nemesis op verifiably did, in one line, from its completion: the
packages that write those completions own how to read them, so the report asks here
and says nothing of its own about any fault."""

from __future__ import annotations

from typing import Any

from kafka_trial.nemesis.catalog import NOT_RUN_OP


def _mb(n: Any) -> str:
    n = int(n or 0)
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} B"


def _per_broker(v: dict[str, Any], key: str, say: Any) -> str:
    got = v.get(key)
    if not isinstance(got, dict) or not got:
        return ""
    return "; ".join(f"broker {b}: {say(x)}" for b, x in sorted(got.items()))


def _lost(x: dict[str, Any]) -> str:
    return f"lost {x.get('files', 0)} files, {_mb(x.get('bytes'))} never fsynced"


def _corrupted(x: dict[str, Any]) -> str:
    first, last = (x.get("bytes") or [None, None])[:2]
    offsets = x.get("offsets")
    at = f"offsets {offsets[0]}-{offsets[1]}" if offsets else "no whole batch"
    if x.get("mode") == "truncate":
        what = f"cut from byte {first} ({x.get('size_before')} -> {x.get('size_after')} B)"
    else:
        what = f"{x.get('flipped_bits')} bits flipped in bytes {first}-{last}"
    return f"{x.get('file')}: {what}, {at}"


def _clock(x: dict[str, Any]) -> str:
    if "min_s" in x:
        return f"strobed, measured {x['min_s']:+.1f} s to {x['max_s']:+.1f} s"
    return f"measured {x.get('offset_s', 0):+.3f} s (asked {x.get('asked_s', 0):+d} s)"


def _freed(x: dict[str, Any]) -> str:
    halted = ", had halted (started again)" if x.get("halted") else ""
    return f"{x.get('refused_writes')} writes ({_mb(x.get('refused_bytes'))}) refused{halted}"


def _app(f: str, v: dict[str, Any]) -> str:
    """What an app-* fault did to the instance it names."""
    what = f"pid {v['pid']}" if "pid" in v else f"container {v.get('container')}"
    who = f"app instance {v.get('instance')} ({what})"
    if f in ("app-kill", "app-restart"):
        how = "killed" if f == "app-kill" else "sent SIGTERM"
        after = f", {v['after']} after" if "after" in v else ""
        return f"{who} {how}, state {v.get('state')} before{after}"
    if f == "app-pause":
        return f"{who} frozen, state {v.get('state')}"
    lane = f"client lane {v['lane']}" if "lane" in v else "its client lane"
    return f"{who} cut off the brokers ({lane})"


def _app_healed(i: str, x: Any) -> str:
    if not isinstance(x, dict):
        return f"app instance {i} {x}"  # "gone": no instance of that index runs
    if "lane" in x:
        return f"app instance {i} reconnected (client lane {x['lane']})"
    return f"app instance {i} resumed, state {x.get('state')}"


def _seen(x: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in x.items())


def _packet(made: Any) -> str:
    if not isinstance(made, dict):
        return str(made)
    if "qdisc" in made:
        return str(made["qdisc"])
    said = f"{made.get('rules')} {made.get('kind')} rule(s), p={made.get('probability')}"
    said += f", to {made['dst']}" if "dst" in made else ""  # one link's: its peer's address
    if "queue" in made:  # reorder, corrupt: the userspace helper the rule queues to
        said += f", queue {made['queue']} bound by helper pid {made.get('helper_pid')}"
    return said


def _packets_healed(b: str, x: dict[str, Any]) -> str:
    if "shaped_packets" in x:
        return (
            f"broker {b}'s rate qdisc sent {x.get('shaped_packets')} packets"
            f" ({x.get('overlimits')} held back)"
        )
    said = f"broker {b}'s rules matched {x.get('matched_packets')} packets"
    helper = x.get("helper")
    if isinstance(helper, dict):  # reorder, corrupt: what the userspace queue did
        did = ", ".join(f"{k} {helper[k]}" for k in ("held", "corrupted") if helper.get(k))
        return f"{said}; its helper queued {helper.get('queued')}" + (f", {did}" if did else "")
    return said + (f"; its helper: {helper}" if helper is not None else "")


def _hijacked(f: str, v: dict[str, Any]) -> str:
    """What a hijack-txn took over, and the epoch it was granted ('' for other ops)."""
    if f != "hijack-txn" or "transactional_id" not in v:
        return ""
    epoch = f", epoch {v['epoch']} (producer id {v.get('producer_id')})" if "epoch" in v else ""
    fenced = f", fencing client {v['client']}" if "client" in v else ""
    return (
        f"{v['transactional_id']} taken over: init_transactions returned in "
        f"{v.get('init_s')} s{epoch}{fenced}"
    )


def _added(node: str, x: Any) -> str:
    """What a membership heal read back of the voter or broker it added."""
    if not isinstance(x, dict):
        return f"node {node}: {x}"
    if "voters" in x:
        return f"node {node} a voter again in {x.get('took_s')} s (voters {x['voters']})"
    synced = "in sync" if x.get("in_sync") else "not yet in sync"
    voter = x.get("voter")
    replaced = (
        f"; its controller a voter as a new replica ({voter.get('from')} -> {voter.get('to')})"
        if isinstance(voter, dict)
        else ""
    )
    return (
        f"fresh broker {node} registered in {x.get('registered_after_s')} s{replaced}; "
        f"{x.get('restored')} partitions moved back to it, {synced}"
    )


def _membership(f: str, v: dict[str, Any]) -> list[str]:
    """What voter-change and remove-broker did, and what their heals added back."""
    out = []
    if f == "voter-remove" and "voter" in v:
        lead = " (the quorum leader)" if v.get("was_leader") else ""
        now = ", an observer now" if v.get("observer") else ""
        out.append(
            f"voter {v['voter']}{lead} removed: voters {v.get('before')} -> {v.get('after')}{now}"
        )
    if f == "remove-broker" and "broker" in v:
        moved = v.get("moved") if isinstance(v.get("moved"), dict) else {}
        out.append(
            f"broker {v['broker']} stopped and unregistered after {len(moved)} partitions "
            f"moved off it in {v.get('moved_s')} s; registered now {v.get('registered')}"
        )
    if isinstance(v.get("added"), dict):
        out += [_added(n, x) for n, x in sorted(v["added"].items())]
    return out


def _reassign(f: str, v: dict[str, Any]) -> list[str]:
    """A reassignment asked for, and where its heal found it done."""
    if f == "reassign" and "to" in v:
        how = "done at once" if v.get("done_at_fault") else "moving"
        return [f"replicas {v.get('from')} -> {v.get('to')}, {how}"]
    if f == "reassign-settle" and isinstance(v.get("settled"), dict):
        return [
            f"{tp}: replicas {x.get('replicas')}, ISR {x.get('isr')}, done "
            f"{x.get('took_s')} s after its request"
            for tp, x in sorted(v["settled"].items())
            if isinstance(x, dict)
        ]
    return []


def effect(f: str, type_: str, value: Any, error: str | None = None) -> str:
    """One line on what the op did; '' when its completion says nothing more than
    its target (the report's fault label has that)."""
    if f == NOT_RUN_OP:
        package = value.get("package") if isinstance(value, dict) else None
        return f"{package} not run: {error or 'no reason recorded'}"
    if type_ == "info":
        return f"did not take effect, or not known to: {error or 'no reason recorded'}"
    v = value if isinstance(value, dict) else {}
    parts = [
        _per_broker(v, "lost", _lost),
        _per_broker(v, "corrupted", _corrupted),
        _per_broker(v, "clock", _clock),
        _per_broker(v, "freed", _freed),
    ]
    for key, why in (("not_crashed", "not crashed"), ("not_corrupted", "not corrupted")):
        if isinstance(v.get(key), dict):
            parts += [f"broker {b} {why}: {r}" for b, r in sorted(v[key].items())]
    if isinstance(v.get("missed"), dict):
        parts += [f"broker {b}'s clock did not show it" for b in sorted(v["missed"])]
    if isinstance(v.get("clients"), dict):
        parts += [
            f"client {x.get('name')} (pid {pid}) frozen, state {x.get('state')}, "
            f"in {x.get('in_call') or 'no call'}"
            for pid, x in sorted(v["clients"].items())
        ]
    if isinstance(v.get("resumed"), dict):
        parts += [f"client pid {pid} resumed, state {st}" for pid, st in v["resumed"].items()]
    if isinstance(v.get("seen"), dict):
        # What a fault on a user's node read back there (cluster.kind ssh).
        parts += [
            f"{where}: {_seen(x)}"
            for where, found in sorted(v["seen"].items())
            for x in found
            if isinstance(x, dict)
        ]
    if f.startswith("app-") and "instance" in v:
        parts.append(_app(f, v))
    if isinstance(v.get("apps"), dict):
        parts += [_app_healed(i, x) for i, x in sorted(v["apps"].items())]
    if isinstance(v.get("apps_healed"), dict):
        done = v["apps_healed"]
        parts += [f"app instances {k} {done[k]}" for k in ("resumed", "restored") if done.get(k)]
    if f == "await-leader":
        if v.get("elected"):
            parts.append(
                f"leader {v.get('leader')} elected {v.get('elected_after_s')} s after "
                f"the old leader {v.get('old_leader')} went"
            )
        else:
            parts.append(f"no other leader (leader {v.get('leader')}, ISR {v.get('isr')})")
    if f == "restart" and "down_s" in v:
        led = f", leading partitions {v.get('led')}" if v.get("led") else ""
        parts.append(
            f"broker {v.get('broker')} down {v.get('down_s')} s{led}; back in sync "
            f"{v.get('in_sync_after_s')} s after its start"
        )
    if f == "packet" and isinstance(v.get("made"), dict):
        parts += [f"broker {b}: {_packet(x)}" for b, x in sorted(v["made"].items())]
    if isinstance(v.get("packets"), dict):
        parts += [
            _packets_healed(b, x) for b, x in sorted(v["packets"].items()) if isinstance(x, dict)
        ]
    parts.append(_hijacked(f, v))
    parts += _reassign(f, v)
    if f == "elect-preferred" and isinstance(v.get("elected"), dict):
        parts += [
            f"partition {p}: leader {x.get('from')} -> {x.get('to')}"
            for p, x in sorted(v["elected"].items())
            if isinstance(x, dict)
        ]
    if f == "await-isr-shrink" and "isr" in v:
        parts.append(f"ISR {v['isr']}")
    parts += _membership(f, v)
    return "; ".join(p for p in parts if p)
