"""Tables: metadata managers, commit, scan planning, readers and writers."""
