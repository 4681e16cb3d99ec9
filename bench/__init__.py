"""Benchmarks (`python -m bench`, `make bench`): ratios to baselines measured in the same run."""
