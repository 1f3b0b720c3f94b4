"""The anomaly checks: one registered check per anomaly of the registry
(checkers/anomalies.py), each a query over the facts (facts/).

- writes.py, reads.py, groups.py, app.py: the checks, by what they judge (what was
  written against what was read, the order of reads, consumer groups, the
  application on trial). The cycle checks are in cycles/.
- runner.py: runs every check in one pass and counts its anomalies and examples.
- undecided.py: what the history cannot decide, and why (the verdict's `problems`).
"""
