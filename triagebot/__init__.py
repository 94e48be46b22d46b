"""triagebot: reproduce speculative-decoding and CUDA-graph performance reports."""

__version__ = "0.1.0"
