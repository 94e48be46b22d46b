"""Fake `python -m sglang.benchmark.serving` (0.5.23's home of the bench client)."""

from sglang.bench_serving import main

if __name__ == "__main__":
    main()
