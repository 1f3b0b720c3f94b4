"""The cluster kinds other than Docker, opened from the spec: what the runner needs to
put a cluster kafka-trial did not build on trial."""

from __future__ import annotations

from typing import Any

from kafka_trial.cluster.bootstrap_cluster import BootstrapCluster
from kafka_trial.cluster.inventory import load_inventory
from kafka_trial.cluster.settings import ClusterSpec
from kafka_trial.cluster.ssh_cluster import SshCluster
from kafka_trial.contracts.errors import TrialError

ElsewhereCluster = SshCluster | BootstrapCluster


def open_elsewhere(spec: ClusterSpec, client_config: dict[str, Any]) -> ElsewhereCluster:
    """The cluster a non-Docker spec names, not yet checked (its `start` checks it)."""
    if spec.kind == "bootstrap":
        assert spec.bootstrap is not None  # the spec's validation requires it
        return BootstrapCluster(spec, spec.bootstrap, client_config)
    assert spec.inventory is not None
    inventory = load_inventory(spec.inventory)
    if len(inventory.nodes) != spec.brokers:
        raise TrialError(
            f"the inventory {spec.inventory} names {len(inventory.nodes)} nodes and "
            f"cluster.brokers is {spec.brokers}",
            "leave cluster.brokers unset with --inventory (it is the inventory's count)",
        )
    return SshCluster(spec, inventory, client_config)
