"""Event time: bounds from column statistics, the read-optimized freshness watermark,
the event-time compaction strategy and the freshness metrics."""
