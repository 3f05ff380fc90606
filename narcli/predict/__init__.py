"""Predicting accuracy and latency from the canonical graph (`nar predict`): graph inputs
(`inputs`), a message-passing network with a numpy twin for inference (`network`), its training
(`training`), labelled data (`datasets`, `sources`), the bundled heads with intervals and
applicability (`build`, `bundle`), evaluation against boosted-tree baselines (`evaluation`) and the
zoo's precomputed predictions (`zoo_predictions`). May import graph, scan, zoo and encode; imports
torch only to train."""
