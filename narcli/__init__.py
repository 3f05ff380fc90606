"""nar: neural architecture retrieval from the command line."""

__version__ = "0.1.0"

# Bumped whenever the canonical graph changes meaning, so stale cache entries are not reused.
IR_VERSION = 1
