"""Fake `sglang` for tests: just enough of `sgl.Engine` for the offline template."""

from __future__ import annotations

import os

from sglang import _fake

__version__ = "0.5.23"


class Engine:
    def __init__(self, **kwargs: object) -> None:
        env = {k: v for k, v in os.environ.items() if k.startswith("SGLANG_")}
        _fake.log("engine_init", kwargs=kwargs, env=env)
        if os.environ.get("FAKE_SGLANG_FAIL") == "engine":
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        self.kwargs = kwargs
        drafts = str(kwargs.get("speculative_num_draft_tokens") or 1)
        self.spec_k = int(drafts) - 1 if kwargs.get("speculative_algorithm") else None

    def generate(
        self,
        prompt: list[str] | None = None,
        sampling_params: dict | None = None,
        input_ids: list[list[int]] | None = None,
        **kw: object,
    ) -> list[dict]:
        batch = input_ids if input_ids is not None else [[1, 2, 3]] * len(prompt or [])
        params = sampling_params or {}
        _fake.log("generate", n=len(batch), sampling_params=params)
        return [_fake.output(ids, int(params.get("max_new_tokens", 16)), self.spec_k)
                for ids in batch]

    def shutdown(self) -> None:
        _fake.log("shutdown")
