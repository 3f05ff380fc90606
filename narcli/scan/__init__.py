"""A scanned model: `scanner` runs the tracers in a child process on a file (or every model file of a
directory) and writes model records and canonical graphs to the SQLite scan `cache`, one transaction
per scan, keyed by the file's `fingerprint` (the file plus the local modules it imports).

May import: `graph`, `trace`. A cache hit reads only SQLite: no torch.
"""
