"""The workloads' settings (the `producer`, `consumer`, `copier`, `app` and `drain`
sections of spec.json), defined with the other run-directory contracts; this path is
the public one."""

from kafka_trial.contracts.spec.workloads import (
    APP_ENV_NAMES,
    DEFAULT_PROCESSES,
    AppSpec,
    ConsumerSpec,
    CopierSpec,
    DrainSpec,
    ProducerSpec,
)

__all__ = [
    "APP_ENV_NAMES",
    "DEFAULT_PROCESSES",
    "AppSpec",
    "ConsumerSpec",
    "CopierSpec",
    "DrainSpec",
    "ProducerSpec",
]
