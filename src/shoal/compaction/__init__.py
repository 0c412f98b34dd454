"""Compaction of primary-key tables: sorted runs, strategies, the rewriter."""
