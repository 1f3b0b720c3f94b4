"""The Spark session an analysis runs on.

- session.py: starts (or reuses) the session, locally or on a spark:// cluster, and
  ahead of the analysis while a run ends (`prestart`).
- sizing.py: whether a history is judged in one task, and the SQL settings for it.
- java.py: the Java 17+ runtime PySpark needs.
- jvm_lookups.py: Py4J's name lookups, answered once per JVM.
"""
