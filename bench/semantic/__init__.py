"""`python -m bench.semantic`: the semantic-recall benchmark (issue #16).

Quality: the labelled evaluation set (eval_set.json) through the real search_memory, keyword
only against hybrid (recall@5, MRR, must-not-return violations). Speed: embedding throughput
against the model's own batch encode, re-embedding with flat memory, hybrid search latency and
its vector part against a raw pgvector (or numpy) nearest-neighbour query on the same data.
"""
