"""Questions asked of the embedded zoo: nearest-neighbour `index`es (annoy + exact re-rank) kept fresh
by `neighbours`, `targets` and `query` (what a name or file on the command line is, as a vector),
`family` prediction with the "no close family" threshold, and the answers behind the commands:
`similar`, `compare`, `check` (pre-commit) and `motif_report`.

May import: every earlier stage. A zoo-name query reads stored vectors only: no torch.
"""
