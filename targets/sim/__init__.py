"""The reference simulator of `ckks` programs (numpy), exact and noisy."""
