"""The dependency-cycle checks (G0, G1c and their process and realtime variants).

- edges.py: the dependency graph's edges, built in Spark, and the registered checks.
- graph.py: on the driver, its strongly connected components and a witness cycle
  for each (rustworkx, numpy).
"""
