"""PySpark jobs that read a history and judge it. Embedded local[*] by default."""
