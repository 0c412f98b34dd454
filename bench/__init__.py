"""Benchmarks for shoal: ``python -m bench`` (``--quick`` for a short run).

The workload: sequential small appends into a partitioned append table, then
cold planning of the latest snapshot and a read of the whole table, measured
side by side for shoal, pypaimon (in its own virtualenv) and raw pyarrow.
"""
