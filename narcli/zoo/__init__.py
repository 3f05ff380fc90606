"""The zoo of known architectures: the read-only `store` (bundled SQLite database plus the user's own),
`build` (trace every model of the chosen sources into a zoo, resumably, in worker processes), what a
zoo source is (`sources`, re-exported to plugins as `narcli.sources`), plugin loading (`plugins`), and
the family / coarse-class `labels` of each model.

May import: `graph`, `trace`, `scan`, `nas`. Reading the zoo never imports torch.
"""
