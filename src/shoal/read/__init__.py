"""Reading: data files into Arrow (merged by key on primary-key tables), incremental
reads, system tables."""
