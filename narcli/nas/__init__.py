"""Neural architecture search spaces used as labelled benchmark data (DARTS, NAS-Bench-201)."""
