"""`nar bench` and `nar calibrate`: measuring a model's latency on this machine (`measure`), the
device fingerprint (`device`), stored measurements (`store`), building a runnable model from what a
user names (`runner`), and fitting this device's latency head from a few zoo measurements
(`calibrate`). May import graph, trace, scan, zoo, encode and predict; imports torch only to run
models."""
