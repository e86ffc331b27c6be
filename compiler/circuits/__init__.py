"""Boolean circuits for encrypted integer arithmetic (issue #23): the netlist IR with structural
hashing and constant folding (netlist.py), exact metrics for the FHEW and BFV targets
(metrics.py, fhew_model.py), circuit generators (generators.py), the per-target chooser
(chooser.py) and logic optimization with ABC (abc.py). docs/circuits.md describes them."""
