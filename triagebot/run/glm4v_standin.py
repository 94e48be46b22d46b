"""The vision-language stand-in: a tiny GLM-4.1V with seeded random weights, written in
the layout vLLM's glm4_1v model and transformers' GLM-4.1V processor read. Nothing is
downloaded; the tokenizer is the text stand-ins' one (`triagebot.run.standins`) with
GLM's special tokens added.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from triagebot.engines.standins import VisionRecipe

# GLM's special tokens, in the order its tokenizer lists them; the processor and vLLM
# look the image and video ones up by name.
_GLM_TOKENS = ("[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>",
               "<|begin_of_image|>", "<|end_of_image|>", "<|image|>", "<|begin_of_video|>",
               "<|end_of_video|>", "<|video|>")
# A template of our own for the chat messages `vllm bench mm-processor` sends: each image
# or video part becomes GLM's placeholder, which the processor widens to its patches.
_GLM_CHAT = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m.role }}|>\n{% if m.content is string %}"
    "{{ m.content }}{% else %}{% for part in m.content %}{% if part.type == 'image' %}"
    "<|begin_of_image|><|image|><|end_of_image|>{% elif part.type == 'video' %}"
    "<|begin_of_video|><|video|><|end_of_video|>{% elif part.type == 'text' %}"
    "{{ part.text }}{% endif %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
# CLIP's normalisation, which GLM-4.1V's processors use.
_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def write_glm4v(recipe: VisionRecipe, folder: Path, tokenizer: Any) -> None:
    """Config, seeded random weights, tokenizer (`tokenizer`, the ring language's, plus
    GLM's special tokens and a chat template) and processor configs of a tiny GLM-4.1V.
    The processor configs are written as JSON: their classes need torchvision, which the
    engine's multimodal environment has and this one need not."""
    import torch
    from transformers import Glm4vConfig, Glm4vForConditionalGeneration

    torch.manual_seed(recipe.seed)
    tokenizer.add_special_tokens({"additional_special_tokens": list(_GLM_TOKENS)})
    tokenizer.chat_template = _GLM_CHAT
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in _GLM_TOKENS}
    head_dim = recipe.hidden // recipe.heads
    # GLM rotates half of each head, split over time, height and width like GLM-4.1V's
    # [8, 12, 12] of 32.
    quarter = head_dim // 8
    text = {"vocab_size": len(tokenizer), "hidden_size": recipe.hidden,
            "intermediate_size": recipe.ffn, "num_hidden_layers": recipe.layers,
            "num_attention_heads": recipe.heads, "num_key_value_heads": recipe.kv_heads,
            "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "partial_rotary_factor": 0.5,
                                "mrope_section": [quarter, (head_dim // 4 - quarter) // 2,
                                                  head_dim // 4 - quarter
                                                  - (head_dim // 4 - quarter) // 2]},
            "pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}
    vision = {"depth": recipe.vision_depth, "hidden_size": recipe.vision_hidden,
              "num_heads": recipe.vision_heads, "intermediate_size": recipe.vision_ffn,
              "out_hidden_size": recipe.hidden, "patch_size": recipe.patch,
              "image_size": recipe.image_size, "spatial_merge_size": 2,
              "temporal_patch_size": 2}
    config = Glm4vConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|image|>"],
        video_token_id=ids["<|video|>"], image_start_token_id=ids["<|begin_of_image|>"],
        image_end_token_id=ids["<|end_of_image|>"],
        video_start_token_id=ids["<|begin_of_video|>"],
        video_end_token_id=ids["<|end_of_video|>"], tie_word_embeddings=False)
    config.eos_token_id = tokenizer.eos_token_id
    model = Glm4vForConditionalGeneration(config)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    shared = {"do_rescale": True, "do_normalize": True, "patch_size": recipe.patch,
              "temporal_patch_size": 2, "merge_size": 2, "image_mean": _CLIP_MEAN,
              "image_std": _CLIP_STD, "processor_class": "Glm4vProcessor"}
    (folder / "preprocessor_config.json").write_text(json.dumps(
        {**shared, "image_processor_type": "Glm4vImageProcessor",
         "size": {"shortest_edge": 12544, "longest_edge": recipe.max_pixels}}, indent=2))
    (folder / "video_preprocessor_config.json").write_text(json.dumps(
        {**shared, "video_processor_type": "Glm4vVideoProcessor",
         "size": {"shortest_edge": 12544, "longest_edge": 4 * recipe.max_pixels}},
        indent=2))
