"""The search behind `kafka-trial shrink`: from a failing schedule, smaller schedules
that still fail, tried by a `trial` that runs one and says whether it failed.

Failures under faults are not deterministic, so a trial that passes proves nothing
about its schedule; one that fails proves the schedule can fail. The search only
ever keeps a schedule a trial saw fail: whatever it ends on is a failing schedule,
never a guess. Three stages, each from the last one's best:

1. delta debugging (Zeller's ddmin) over the fault episodes, a fault step with its
   heal: the fewest episodes that still fail;
2. the fault phase cut short: the gaps between episodes closed to the quiet time,
   the phase ended after the last heal, then each episode's fault held half as long
   while it still fails;
3. simpler targets: the roles the fault packages pick from narrowed to one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from kafka_trial.contracts.schedule import Step

# A fault is never held shorter than this: a kill needs a moment to be noticed.
MIN_FAULT_S = 2.0


@dataclass(frozen=True)
class Episode:
    """A fault step and the heal that ends it."""

    fault: Step
    heal: Step

    @property
    def held_s(self) -> float:
        return self.heal.at_s - self.fault.at_s

    def at(self, start_s: float, held_s: float) -> Episode:
        return Episode(
            replace(self.fault, at_s=round(start_s, 3)),
            replace(self.heal, at_s=round(start_s + held_s, 3)),
        )


def episodes(steps: Sequence[Step]) -> list[Episode]:
    """Each fault step paired with the first later heal of its package."""
    out: list[Episode] = []
    open_: dict[str, list[Step]] = {}
    for s in sorted(steps, key=lambda s: s.at_s):
        if s.action == "fault":
            open_.setdefault(s.package, []).append(s)
        elif open_.get(s.package):
            out.append(Episode(open_[s.package].pop(0), s))
    return sorted(out, key=lambda e: (e.fault.at_s, e.fault.package))


def steps_of(eps: Sequence[Episode]) -> list[Step]:
    """The schedule: faults before heals at the same time, as the runner plays them."""
    flat = [s for e in eps for s in (e.fault, e.heal)]
    return sorted(flat, key=lambda s: (s.at_s, s.action != "heal"))


@dataclass(frozen=True)
class Candidate:
    """A schedule to try: its episodes, the fault phase's length, the roles faults pick
    from (None: the source run's), and which stage proposed it."""

    stage: str
    episodes: tuple[Episode, ...]
    duration_s: float
    targets: tuple[str, ...] | None = None

    @property
    def steps(self) -> list[Step]:
        return steps_of(self.episodes)

    def key(self) -> tuple:
        return (self.episodes, self.duration_s, self.targets)


Trial = Callable[[Candidate], bool]


class Search:
    """Runs the stages, asking `trial` of each candidate once. `best` is always a
    schedule a trial saw fail (the source run's, until a smaller one does)."""

    def __init__(self, source: Candidate, trial: Trial, quiet_s: float) -> None:
        self.best = source
        self.quiet_s = quiet_s
        self._trial = trial
        self._seen: dict[tuple, bool] = {}
        self.tried = 0

    def fails(self, c: Candidate) -> bool:
        if c.key() not in self._seen:
            self.tried += 1
            self._seen[c.key()] = self._trial(c)
            if self._seen[c.key()] and _smaller(c, self.best):
                self.best = c
        return self._seen[c.key()]

    def run(self, roles: Sequence[str]) -> Candidate:
        self.ddmin()
        self.shorten()
        self.narrow(roles)
        return self.best

    def ddmin(self) -> None:
        """Zeller's ddmin: try each of n chunks alone, then each complement; on a
        failure keep it, else split finer, until single episodes were tried."""
        eps = list(self.best.episodes)
        n = 2
        while len(eps) >= 2:
            chunks = _split(eps, n)
            reduced = False
            for subset in [*chunks, *(_without(eps, c) for c in chunks if n > 2)]:
                if self.fails(self._with(subset, "episodes")):
                    eps, n, reduced = subset, max(2 if subset in chunks else n - 1, 2), True
                    break
            if not reduced:
                if n >= len(eps):
                    break
                n = min(2 * n, len(eps))

    def _with(self, eps: Sequence[Episode], stage: str) -> Candidate:
        return replace(self.best, stage=stage, episodes=tuple(eps))

    def shorten(self) -> None:
        """Gaps closed, the phase cut after the last heal, then faults held shorter;
        never a fault later or a phase longer than the best's."""
        packed = _packed(self.best.episodes, self.quiet_s)
        c = Candidate("shorter", packed, self._end(packed), self.best.targets)
        if c.key() != self.best.key():  # nothing to close: the best, tried already
            self.fails(c)
        while True:
            held = [max(MIN_FAULT_S, round(e.held_s / 2, 3)) for e in self.best.episodes]
            if all(h >= e.held_s for h, e in zip(held, self.best.episodes, strict=True)):
                return
            shorter = _packed(self.best.episodes, self.quiet_s, held)
            c = Candidate("shorter", shorter, self._end(shorter), self.best.targets)
            if not self.fails(c):
                return

    def _end(self, eps: Sequence[Episode]) -> float:
        # Packing moves no heal later, so the best's phase still holds every step.
        return min(_end(eps, self.quiet_s), self.best.duration_s)

    def narrow(self, roles: Sequence[str]) -> None:
        """The roles faults pick from, one at a time, in the order given (the roles
        the source run's faults were seen to hit first)."""
        if len(roles) < 2 and self.best.targets is not None:
            return
        for role in roles:
            if self.fails(replace(self.best, stage="targets", targets=(role,))):
                return


def _split(eps: list[Episode], n: int) -> list[list[Episode]]:
    size, extra = divmod(len(eps), n)
    out, i = [], 0
    for k in range(n):
        j = i + size + (1 if k < extra else 0)
        out.append(eps[i:j])
        i = j
    return [c for c in out if c]


def _without(eps: list[Episode], chunk: list[Episode]) -> list[Episode]:
    return [e for e in eps if e not in chunk]


def _periods(eps: Sequence[Episode]) -> Iterator[list[int]]:
    """Indexes of episodes that overlap in time, group by group, in time order."""
    group: list[int] = []
    end = None
    for i, e in enumerate(eps):
        if end is not None and e.fault.at_s >= end:
            yield group
            group, end = [], None
        group.append(i)
        end = e.heal.at_s if end is None else max(end, e.heal.at_s)
    if group:
        yield group


def _packed(
    eps: Sequence[Episode], quiet_s: float, held: Sequence[float] | None = None
) -> tuple[Episode, ...]:
    """The episodes with the gaps between overlapping groups closed to `quiet_s`, each
    held `held[i]` (else as long as before); within a group, starts keep their offsets.
    A group never starts later than it did: a gap already shorter stays as it was."""
    out: list[Episode] = [eps[0]] * len(eps)
    t = quiet_s
    for group in _periods(eps):
        first = min(eps[i].fault.at_s for i in group)
        t = min(t, first)
        end = t
        for i in group:
            h = eps[i].held_s if held is None else held[i]
            out[i] = eps[i].at(t + eps[i].fault.at_s - first, h)
            end = max(end, out[i].heal.at_s)
        t = end + quiet_s
    return tuple(out)


def _end(eps: Sequence[Episode], quiet_s: float) -> float:
    """The fault phase ends a quiet spell after the last heal."""
    return round(max(e.heal.at_s for e in eps) + quiet_s, 3)


def size(n_episodes: int, duration_s: float, targets: tuple[str, ...] | None) -> tuple:
    """Fewer episodes, then a shorter phase, then fewer roles: what a reader of the
    reproduction has to think about. Smaller sorts first."""
    return (n_episodes, duration_s, len(targets) if targets else 99)


def _smaller(a: Candidate, b: Candidate) -> bool:
    return size(len(a.episodes), a.duration_s, a.targets) < size(
        len(b.episodes), b.duration_s, b.targets
    )
