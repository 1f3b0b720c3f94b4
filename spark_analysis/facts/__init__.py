"""What a history proves, before any check judges it.

- shared_frames.py: `AnalysisFrames`, one analysis's frames with the intermediate
  frames several checks share, built once and cached; and `check`, which registers
  the one check of each anomaly of the registry.
- derived.py: the facts every check starts from (which sends must have
  committed, the version order, how far the drain read, where each send sits).
- rebalances.py: the rebalance events that bound each consumer's assignments.
- app_output.py: what the application on trial consumed and output.
- fences.py: the transactional sends a fenced session invoked after its fence.
- stats.py: what the history holds, counted (results.json's `stats`).
"""
