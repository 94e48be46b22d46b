"""Fake `python -m sglang.bench_serving`: sends the requests, appends one JSONL record.

Only the flags the real 0.5.23 client has are accepted, so a template passing anything
else fails here the way it would there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from sglang import _fake


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="sglang")
    p.add_argument("--model")
    p.add_argument("--dataset-name", default="sharegpt")
    p.add_argument("--num-prompts", type=int, default=1000)
    p.add_argument("--random-input-len", type=int, default=1024)
    p.add_argument("--random-output-len", type=int, default=1024)
    p.add_argument("--random-range-ratio", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--disable-tqdm", action="store_true")
    p.add_argument("--max-concurrency", type=int)
    p.add_argument("--disable-ignore-eos", action="store_true")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int)
    p.add_argument("--output-file")
    return p.parse_args()


def post(base: str, body: dict) -> tuple[dict, float]:
    req = urllib.request.Request(base + "/generate", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as resp:
        doc = json.loads(resp.read())
    return doc, time.perf_counter() - start


def main() -> None:
    args = parse()
    _fake.log("bench", argv=sys.argv[1:])
    base = f"http://{args.host}:{args.port}"
    body = {"input_ids": [7] * args.random_input_len,
            "sampling_params": {"max_new_tokens": args.random_output_len,
                                "temperature": args.temperature,
                                "ignore_eos": not args.disable_ignore_eos}}
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.max_concurrency or 8) as pool:
        results = list(pool.map(lambda _: post(base, body), range(args.num_prompts)))
    duration = time.perf_counter() - start
    with urllib.request.urlopen(base + "/server_info", timeout=10) as resp:
        info = json.loads(resp.read())
    out = sum(doc["meta_info"]["completion_tokens"] for doc, _ in results)
    lat_ms = [dt * 1000 for _, dt in results]
    record = {
        "backend": args.backend, "dataset_name": args.dataset_name,
        "max_concurrency": args.max_concurrency, "duration": duration,
        "completed": len(results), "total_output_tokens": out,
        "output_throughput": out / duration,
        "median_ttft_ms": statistics.median(lat_ms) / 2,
        "median_tpot_ms": 1.5, "median_itl_ms": 1.25,
        "accept_length": info["internal_states"][0].get("avg_spec_accept_length"),
    }
    with open(args.output_file, "a") as f:
        f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
