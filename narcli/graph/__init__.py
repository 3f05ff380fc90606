"""The canonical architecture graph: `ArchGraph` (nodes, edges, JSON form, content hash), the operation
vocabulary with the PyTorch/ONNX operator tables that map onto it, canonicalisation of a tracer's
`RawGraph` (the rule table that makes every tracer and idiom agree), and synthetic graphs for tests.

The bottom of the pipeline: imports nothing from `narcli` but `errors`; pure Python, no torch.
"""
