"""What the inputs were: `image` or `video` when the report says its inputs are multimodal,
`text` when they plainly are text, null when that is not stated.

Text needs evidence: a text dataset (random, ShareGPT, MT-Bench, GSM8K, GPQA...), a model
that has no vision input at all, or a llama.cpp run without a projector (`--mmproj`). A
vision-language model run without saying what the prompts held is null, as is a report
that names no model or workload. Inputs may be named only by their dataset (OCRBench,
MMMU) or in code (`image_url`); a projector flag or a multimodal cache log line is a
multimodal cue that rules text out.
"""

from __future__ import annotations

import re

from triagebot.parse.common import Fact, as_int, fast
from triagebot.parse.decide.assembler import Assembler

_IMAGE_RE = fast(
    r"image_url|\"image\"\s*:\s*[1-9]|image=[1-9]|multi_modal_data=\{\s*['\"]image|"
    r"['\"]multi_modal_data['\"]\s*:\s*\{\s*['\"]image|\bimages?=[A-Za-z_\[]|PIL\.Image|"
    r"Image\.open\(|--modality image|<image>|\bvisionarena\b|\bmmmu\b|\bocrbench\b|\bdocvqa\b|"
    r"\bchartqa\b|\btextvqa\b|\bmathvista\b|\bmmbench\b|\bomnidocbench\b|"
    r"\d+\s?images?\s?(?:/|per)\s?(?:req|request|prompt)|\bimages?\b.*(?:input|prompt)|"
    r"multimodal (?:ocr|document)|\bocr (?:workload|requests?|inputs?)|document parsing",
    'i"\'mp-<vodct0123456789')
_VIDEO_RE = fast(r"video_url|\"video\"\s*:\s*[1-9]|video=[1-9]|--modality video|"
                       r"['\"]video['\"]\s*:\s*(?:\[|[A-Za-z_])|\bvideos?=[A-Za-z_\[]|"
                       r"\bvideo-?mme\b|\d+\s?videos?\s?(?:/|per)\s?(?:req|request)",
                 'v"\'-0123456789')
# Cues that the run was multimodal without saying what it was fed.
_MULTIMODAL_CUE_RE = fast(r"--mmproj\b|\bMM cache\b|--limit-mm-per-prompt|"
                                r"\bmultimodal (?:inputs?|requests?|prompts?)\b", '-m')
_TEXT_DATASET_RE = fast(
    r"\bsharegpt\b|\bmt[-_ ]?bench\b|\bgsm8k\b|\bgpqa\b|\bhumaneval\b|\blongbench\b|"
    r"\balpaca\b|\baime\b|\blivecodebench\b|\bspec[-_]?bench\b|\bmath-?500\b|\bsonnet\b|"
    r"\bsynthetic (?:text )?(?:prompts?|inputs?|requests?)\b|"
    r"--dataset[-_]name[= ](?:random|sharegpt|sonnet|burstgpt|hf)\b|\brandom (?:dataset|"
    r"prompts?|inputs?)\b|\btext (?:prompts?|inputs?|only)\b", 'smghla-rt')
# Models with a vision input (Qwen3.5 and later are natively multimodal) ...
_VISION_MODEL_RE = fast(
    r"\bVLM\b|-VL\b|-VL-|\bOCR\b|\bvision\b|multimodal|multi-modal|--mllm|\bmllm\b|\d+V\b|"
    r"\d+V-|qwen ?3\.[5-9]|\bgemma[- ]?[34]\b|gemma-?3n?-\d|llama-?4\b|llama-?3\.2-\d+b-vision|"
    r"internvl|llava|pixtral|minicpm-?[vo]\b|minicpm-?[vo]-|glm-?4\.\dv|glm-?4v|kimi-vl|"
    r"phi-?3\.5-vision|phi-?4-multimodal|idefics|paligemma|molmo|smolvlm|"
    r"mistral-small-3\.[12]|sharegpt4v", 'v-om0123456789qglipks')
# ... and families that have none.
_TEXT_MODEL_RE = fast(
    r"\bllama[- ]?(?:[123](?:\.[0-3])?\b|-?\d+b\b|2-|3-)|meta-llama-3|\bqwen(?:1\.5|2(?:\.5)?|"
    r"3)?[- ](?!vl)|\bqwen(?:1\.5|2(?:\.5)?|3)-(?!vl)|qwen3-next|\bdeepseek[- ](?:v[2-4]|r1|"
    r"coder|llm|math)|gpt-?oss|\bmistral[- ]7b|\bmixtral|\bopt-\d|\bsmollm|\bphi-?[1-4]\b(?!"
    r"[.-]?\d?[- ]?(?:vision|multimodal))|\bgemma[- ]?[12]\b|\bvicuna|\bfalcon|\binternlm|"
    r"\bgranite|\bolmo|\bnemotron|\bernie-?4\.5(?!-vl)|\bmimo(?!-vl)|\bkimi-k2|\bminimax|"
    r"\bglm-?(?:4\.[5-7]|5)(?!\.?\dv)|\bglm-?4-(?!v)|\bzephyr|\bcodellama|\bstarcoder|"
    r"\bbaichuan|\bchatglm|\btinyllama|\bminicpm\d(?:\.\d)?(?!-?[vo])|\bhunyuan|\blongcat|"
    r"\bseed-oss|\bexaone|\bcommand-r", 'lmqdgospvfinekzcbth')


def decide_modality(a: Assembler) -> None:
    modality, fact, words = _modality(a)
    a.req.modality = modality  # type: ignore[assignment]
    if modality is not None:
        a.cite("modality", fact or a.locate("modality", words))


def _modality(a: Assembler) -> tuple[str | None, Fact | None, list[str]]:
    """The modality, with the setting it rests on or the words that say it."""
    limits = [f for f in a.values("mm_limits") if isinstance(f.value, dict)]
    if limits and all(as_int(v, 0) == 0 for f in limits for v in f.value.values()):
        # `--limit-mm-per-prompt '{"image": 0, "video": 0}'`: multimodal inputs switched off.
        return "text", limits[0], []
    body = "\n".join(a.doc.body_lines)
    named = "\n".join([a.wording.title, a.wording.prose, *a.req.models, *a.req.draft_models])
    image = _IMAGE_RE.search(f"{a.wording.title}\n{body}")
    video = _VIDEO_RE.search(f"{a.wording.title}\n{body}")
    vision_model = _VISION_MODEL_RE.search(named)
    if vision_model and not (image or video):
        # A vision model fed "screenshots" or "videos": the inputs are named in words.
        prose = _NOT_INPUT_IMAGE_RE.sub(" ", a.wording.prose)
        image = _IMAGE_NOUN_RE.search(prose)
        video = _VIDEO_NOUN_RE.search(prose)
    if image or video:
        if image and video:
            return None, None, []
        return ("image", None, [image.group(0)]) if image else \
            ("video", None, [video.group(0)] if video else [])
    if _MULTIMODAL_CUE_RE.search(body):
        return None, None, []
    if (m := _TEXT_DATASET_RE.search(f"{named}\n{body}")):
        return "text", None, [m.group(0)]
    if a.req.engine == "llama.cpp" and (a.runs or any(m.lower().endswith(".gguf")
                                                     for m in a.req.models)):
        # A llama.cpp run (or its flags quoted), or its GGUF weights, without a projector:
        # it reads only text.
        runs = [r for r in a.runs if r.origin.startswith("llama")] or a.runs
        fact = Fact("modality", "text", runs[0].line, runs[0].text, "cmdline") if runs \
            else None
        return "text", fact, [m for m in a.req.models if m.lower().endswith(".gguf")]
    if not vision_model and (m := _TEXT_MODEL_RE.search(named)):
        return "text", None, [m.group(0)]
    return None, None, []


# "Image" that is not an input: a container image, a table row named "Image", a picture
# pasted into the post (its alt text, its markup).
_NOT_INPUT_IMAGE_RE = re.compile(
    r"\b(?:docker|container|base|server|runtime|os|vm|the|this|that|our|my|same|new|old|"
    r"official|nightly|release|pre-?built)\s+images?\b|^\W*\|?\s*\**images?\**\s*(?:\||:)|"
    r"!\[[^\]]*\]|<img\b[^>]*>|\bimages?\s*[:=]\s*`?[\w.-]+/", re.I | re.M)
_IMAGE_NOUN_RE = re.compile(r"\b(?:images?|pictures?|photos?|screenshots?|charts?|diagrams?|"
                            r"scanned (?:pages?|documents?))\b", re.I)
_VIDEO_NOUN_RE = re.compile(r"\bvideos?\b|\bvideo frames\b|\bclips?\b", re.I)
