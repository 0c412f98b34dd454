"""Writing: input conformed to the table, data files with their statistics, bucket
assignment, sequenced primary-key writes, and the committer."""
