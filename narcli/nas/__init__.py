"""Neural architecture search spaces used as labelled benchmark data (DARTS, NAS-Bench-201): the
spaces as data, their networks as real `nn.Module`s, and their graphs written out directly.

May import: `graph`, `trace`. The `nar-nas` plugin turns these into zoo sources.
"""
