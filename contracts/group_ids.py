"""The consumer groups a run's clients are members of while they run.

The group consumers, the exactly-once copiers and the application on trial register
their group here; the nemesis's `group-coordinator` role aims at the broker that
coordinates one of them. The group ids are made from the run's id, which the nemesis
is never told, as with `transactional_ids.TXN_IDS`. Several workers share a group, so
each registration is counted: a group is live until its last member unregisters. One
registry per Python process: a campaign's runs come one after another.
"""

from __future__ import annotations

import threading


class GroupIds:
    def __init__(self) -> None:
        self._members: dict[str, int] = {}
        self._workloads: dict[str, str] = {}
        self._lock = threading.Lock()

    def register(self, group_id: str, workload: str) -> None:
        with self._lock:
            self._members[group_id] = self._members.get(group_id, 0) + 1
            self._workloads[group_id] = workload

    def unregister(self, group_id: str) -> None:
        with self._lock:
            left = self._members.get(group_id, 0) - 1
            if left > 0:
                self._members[group_id] = left
            else:
                self._members.pop(group_id, None)
                self._workloads.pop(group_id, None)

    def live(self) -> list[tuple[str, str]]:
        """(group id, workload) in the ids' order: a replay's pick takes the same one."""
        with self._lock:
            return sorted(self._workloads.items())


GROUP_IDS = GroupIds()
