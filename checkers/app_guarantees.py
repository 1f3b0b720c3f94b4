"""What the application on trial's declared guarantee allows: the verdict's policy for
the app-output-* anomalies (checkers/anomalies.py). Detection stays separate: the
checks count every lost, doubled, unexpected and reordered output; the guarantee
only decides which of them make the run invalid.
"""

from __future__ import annotations

from kafka_trial.contracts.app_contract import GUARANTEES

# Each guarantee's promise about the outputs, as the articles put it: exactly-once
# loses and doubles nothing; at-least-once may repeat an output (a crash between the
# produce and the commit replays it), never drop one; at-most-once may drop one (a
# crash between the commit and the produce), never repeat it.
_ALLOWS: dict[str, tuple[str, ...]] = {
    "exactly-once": (),
    "at-least-once": ("app-output-duplicate",),
    "at-most-once": ("app-output-lost",),
}
# An app that promises no order keeps none: its reorders are no anomaly.
_REORDER = "app-output-reorder"


def app_allows(guarantee: str, per_key_order: bool) -> tuple[str, ...]:
    """The app-output anomaly types a run of an application declaring `guarantee`
    (and, if `per_key_order`, order per key) allows."""
    if guarantee not in _ALLOWS:
        raise ValueError(f"unknown guarantee {guarantee!r}; choose from {', '.join(GUARANTEES)}")
    return _ALLOWS[guarantee] + (() if per_key_order else (_REORDER,))
