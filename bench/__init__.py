"""Benchmarks for shoal: ``python -m bench`` (``--quick`` for a short run,
``--workload appends|primary-key`` for one workload).

Two workloads, each measured side by side for shoal, pypaimon (in its own
virtualenv) and raw pyarrow: sequential small appends into a partitioned append
table, then cold planning and a full read (``bench.suite``); upserts into a bucketed
primary-key table, then the real-time (merged) read and a full compaction
(``bench.primary_key``).
"""
