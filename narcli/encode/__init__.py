"""From canonical graphs to vectors: encoder `features` and `motifs` (pure numpy), the NAR `encoder`
and its GCN/GAT baselines (torch-geometric), the bundled `weights`, the `embedder` that turns graphs
into embeddings and family predictions, `zoo_embed` (store them in a zoo), and the learning side:
`dataset` (the zoo's labelled items and splits), `augment` (edited variants for training),
`training`, `evaluation` metrics and `retrieval_eval` (`nar train encoder`, `nar eval retrieval`),
`darts_data` (the DARTS benchmark).

May import: `graph`, `trace`, `scan`, `nas`, `zoo`. Featurising needs no torch; embedding does.
"""
