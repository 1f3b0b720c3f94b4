"""Faults as data: packages of fault + heal, a seeded schedule, and the op recorder."""
