"""The anomaly checks: one check per anomaly of the registry (checkers/anomalies.py),
over the facts (facts/).

- partition_kernel.py and value_kernel.py: the checks about one (topic, partition)
  and about one value's life, each kernel one vectorised function over its key's rows;
  partition_pass.py and value_pass.py run them as one Spark pass each, and
  kernel_columns.py is what both read their columns with.
- order_kernel.py: app-output-reorder, per output partition, from the value pass's
  first outputs.
- The cycle checks are in cycles/, the only checks still written as queries. What
  the kernels start from (how far reads and the drain reached, the rebalance events,
  the groups' offsets, the fenced sessions' sends) are facts (facts/).
- runner.py: runs every check in one pass and counts its anomalies and examples.
- undecided.py: what the history cannot decide, and why (the verdict's `problems`).
"""
