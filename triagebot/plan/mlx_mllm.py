"""vllm-mlx's multimodal (MLLM) path in a plan: which reports are about it, and the
workload that takes it, on any runner.

vllm-mlx serves a vision-language model through its MLLM engine (`--mllm`), and MTP then
drafts and verifies in `mllm_batch_generator`, a path of its own with its own counters. A
report about that path is answered only by requests that take it: chat messages that
carry images. Pure: the plan's fields in, the plan's fields out.
"""

from __future__ import annotations

from triagebot.engines.vllm_mlx import IMAGE_SIZE
from triagebot.plan import cpu, defaults
from triagebot.plan_model import CellWorkload
from triagebot.request_model import ReproRequest

_NOTE = ("the report is about vllm-mlx's multimodal (MLLM) MTP path: the cells serve the "
         "model with --mllm and every prompt is a chat message carrying an image, so MTP "
         "drafts and verifies in that path (mllm_batch_generator) with its own /v1/status "
         "counters")


def about_mllm(request: ReproRequest) -> bool:
    """The report names vllm-mlx's multimodal path (its `mllm` modules and flag) or
    sends images or video."""
    quoted = (e.text for found in request.evidence.values() for e in found)
    return (request.modality not in (None, "text")
            or any("mllm" in text.lower() for text in quoted))


def mllm_workload(workload: CellWorkload, request: ReproRequest, choices: defaults.Choices, *,
                  side: int | None = None) -> CellWorkload:
    """`workload` as chat messages of the report's number of images (one where it states
    none), of its image size (each side capped to `side` where given), with a note."""
    choices.note(_NOTE)
    size = cpu.fit_image_size(request.workload.image_size, choices, side=side,
                            default=IMAGE_SIZE)
    return workload.model_copy(update={
        "modality": "image", "dataset": "random-mm", "api": "chat",
        "images_per_prompt": request.workload.image_inputs or 1, "videos_per_prompt": 0,
        "image_size": size})
