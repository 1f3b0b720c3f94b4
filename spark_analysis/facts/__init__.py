"""What a history proves, before any check judges it.

- shared_frames.py: `AnalysisFrames`, one analysis's frames with the intermediate
  frames several checks share, built once and cached; and `check`, which registers
  the one check of each anomaly of the registry.
- derived.py: the facts every check is a query over (which sends must have
  committed, the version order, how far the drain read, where each send sits).
- stats.py: what the history holds, counted (results.json's `stats`).
"""
