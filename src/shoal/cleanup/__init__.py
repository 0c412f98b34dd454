"""Everything that deletes files: the only package that does."""
