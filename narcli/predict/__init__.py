"""Predicting accuracy and latency from the canonical graph, NAR-Former style: node tokens
(`tokens`), a transformer with multi-stage fusion (`model`), its training (`training`), the
figures (`metrics`) and NAS-Bench-201 labels (`nb201_data`). Work in progress toward `nar predict`.
May import graph, nas, zoo and encode (for the featurised nodes); imports torch only in `model`
and `training`."""
