"""Primary-key tables: merge-on-read of sorted runs, LSM levels."""
