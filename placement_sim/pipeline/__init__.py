"""PySpark jobs that evaluate replica placers at scale."""
