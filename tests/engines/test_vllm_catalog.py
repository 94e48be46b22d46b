"""The shipped vLLM release table and what the catalog answers from it."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import pytest

from triagebot.engines import vllm_catalog as cat
from triagebot.engines import vllm_translate as tr
from triagebot.engines.vllm_catalog import ConfigRejected, UnknownRelease

FOUR = ("0.11.0", "0.17.1", "0.20.2", "0.33.0")
REQUIRED = ("0.10.0", *FOUR)


# --- data file integrity ------------------------------------------------------------------


def test_required_releases_present_and_readable() -> None:
    assert set(REQUIRED) <= set(cat.releases())
    assert cat.failed_releases() == {}


def test_every_minor_from_0_10_to_0_33_is_covered() -> None:
    minors = {cat.version_key(v)[:2] for v in cat.releases()}
    assert {(0, m) for m in range(10, 34)} <= minors


@pytest.mark.parametrize("version", cat.releases())
def test_release_row_is_complete(version: str) -> None:
    info = cat.load_table().releases[version]
    assert info.ok and info.version == version
    for keys in (info.spec_config_keys, info.compilation_config_keys, info.engine_arg_keys):
        assert keys and keys == sorted(set(keys))
    assert info.spec_literals["method"]
    assert info.env_vars
    assert info.wheel is not None
    assert re.fullmatch(r"[0-9a-f]{64}", info.wheel.sha256)
    assert info.wheel.filename.startswith(f"vllm-{version}-") and info.wheel.size > 10**7
    # The keys every template relies on exist everywhere.
    assert {"method", "model", "num_speculative_tokens"} <= set(info.spec_config_keys)
    assert {"speculative_config", "compilation_config", "enforce_eager"} <= set(
        info.engine_arg_keys
    )


def test_data_file_is_canonical_json() -> None:
    text = resources.files("triagebot.engines").joinpath("data", cat.DATA_FILE).read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


# --- facts from engines.md §7, checked against the extracted data ------------------------


def test_history_matches_reference() -> None:
    assert "mtp" not in cat.spec_methods("0.10.2") and "mtp" in cat.spec_methods("0.11.0")
    assert "dflash" in cat.spec_methods("0.20.2") and "dflash" not in cat.spec_methods("0.17.1")
    assert "medusa" in cat.spec_methods("0.32.0") and "medusa" not in cat.spec_methods("0.33.0")
    assert cat.rejection_sample_methods("0.17.1") == []
    assert cat.rejection_sample_methods("0.20.2") == ["probabilistic", "strict", "synthetic"]
    assert cat.rejection_sample_methods("0.33.0") == ["block", "fly", "standard", "synthetic"]
    assert cat.cudagraph_modes("0.10.0") == []
    assert cat.cudagraph_modes("0.11.0") == [
        "NONE",
        "PIECEWISE",
        "FULL",
        "FULL_DECODE_ONLY",
        "FULL_AND_PIECEWISE",
    ]
    assert cat.encoder_cudagraph_keys("0.17.1") == []
    assert "encoder_cudagraph_max_images_per_batch" in cat.encoder_cudagraph_keys("0.19.1")
    assert "encoder_cudagraph_max_vision_items_per_batch" in cat.encoder_cudagraph_keys("0.20.2")
    assert not cat.has_mm_processor_bench("0.11.0") and cat.has_mm_processor_bench("0.17.1")
    assert not cat.has_env_var("VLLM_USE_V2_MODEL_RUNNER", "0.11.0")
    assert cat.has_env_var("VLLM_USE_V2_MODEL_RUNNER", "0.17.1")
    assert "--speculative-config" in cat.engine_cli_flags("0.11.0")


# --- versions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("0.17.1", "0.17.1"),
        ("v0.20.2", "0.20.2"),
        ("0.33.0+cu129", "0.33.0"),
        ("0.17.0", "0.17.0"),
        ("0.10.1.1", "0.10.1.1"),
        ("0.23.1rc1.dev901+g2f3f441f8", "0.23.0"),  # a main build after 0.23.0
        ("0.20.3", "0.20.2"),  # a patch we do not know: nearest lower, same minor
        ("0.9", "0.9.0"),  # a report that names only the minor
        ("0.9.2", "0.9.2"),
        ("0.8.5", "0.8.5"),  # the oldest release vLLM's CPU build has
    ],
)
def test_resolve_release(given: str, expected: str) -> None:
    assert cat.resolve_release(given) == expected


@pytest.mark.parametrize("given", ["0.34.0", "0.11.0rc1", "0.8.4", "latest", ""])
def test_resolve_release_refuses(given: str) -> None:
    with pytest.raises(UnknownRelease):
        cat.resolve_release(given)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("0.17.1", "0.17.1"),  # known: the same answer as resolve_release
        ("0.34.0", "0.33.0"),  # newer than the table: the newest known
        ("0.11.0rc1", "0.10.2"),  # a pre-release of a minor: the release before it
        ("0.7.3", "0.8.5"),  # older than the table: the oldest known
        ("0.28.1rc1.dev380+g25268f0c9", "0.28.0"),
    ],
)
def test_nearest_release_never_refuses_a_version(given: str, expected: str) -> None:
    assert cat.nearest_release(given) == expected


@pytest.mark.parametrize("given", ["latest", "", "main"])
def test_nearest_release_refuses_what_is_not_a_version(given: str) -> None:
    with pytest.raises(UnknownRelease):
        cat.nearest_release(given)


def test_every_release_the_cpu_build_can_provision_is_in_the_table() -> None:
    known = cat.releases()
    for version in ("0.8.5", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0"):
        assert version in known


# --- the version test: one plan, four releases ---------------------------------------------

PLANS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"method": "qwen3_next_mtp", "num_speculative_tokens": 2},
        {"cudagraph_mode": "FULL_AND_PIECEWISE", "cudagraph_capture_sizes": [1, 2, 4]},
    ),
    (
        {
            "method": "eagle3",
            "model": "draft",
            "num_speculative_tokens": 3,
            "rejection_sample_method": "strict",
        },
        {"cudagraph_mode": "piecewise", "level": 3},
    ),
    (
        {
            "method": "mtp",
            "num_speculative_tokens": 1,
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_length": 2.5,
        },
        {"cudagraph_mm_encoder": True, "encoder_cudagraph_max_images_per_batch": 4},
    ),
    (
        {"method": "dflash", "model": "draft", "num_speculative_tokens": 4},
        {"mode": "VLLM_COMPILE", "max_cudagraph_capture_size": 256},
    ),
]


@pytest.mark.parametrize("version", FOUR)
@pytest.mark.parametrize("plan", PLANS, ids=lambda p: str(p[0].get("method")))
def test_same_plan_renders_only_accepted_keys_or_names_the_rejection(
    version: str, plan: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    spec, comp = plan
    for translate, keys, literals in (
        (tr.translate_speculative_config, cat.spec_config_keys, _spec_literals),
        (tr.translate_compilation_config, cat.compilation_config_keys, _comp_literals),
    ):
        cfg = spec if translate is tr.translate_speculative_config else comp
        try:
            out = translate(cfg, version)
        except ConfigRejected as exc:
            assert exc.key in cfg or exc.key in {"method", "rejection_sample_method"}
            assert exc.key in str(exc) and exc.accepted and exc.version == version
            continue
        assert set(out) <= set(keys(version))
        for key, value in out.items():
            allowed = literals(version).get(key)
            assert allowed is None or value in allowed, (key, value)
        if "cudagraph_mode" in out:
            assert out["cudagraph_mode"] in cat.cudagraph_modes(version)


def _spec_literals(version: str) -> dict[str, list[str]]:
    return cat.release_info(version).spec_literals


def _comp_literals(version: str) -> dict[str, list[str]]:
    return cat.release_info(version).compilation_literals


def test_version_test_outcomes_are_the_expected_ones() -> None:
    synthetic = PLANS[2][0]
    with pytest.raises(ConfigRejected) as exc:
        tr.translate_speculative_config(synthetic, "0.17.1")
    assert exc.value.key == "rejection_sample_method" and exc.value.reason == "key"
    assert tr.translate_speculative_config(synthetic, "0.20.2") == synthetic
    assert tr.translate_speculative_config(synthetic, "0.33.0") == synthetic
    with pytest.raises(ConfigRejected) as exc:
        tr.translate_speculative_config(PLANS[3][0], "0.17.1")
    assert exc.value.key == "method" and "eagle3" in exc.value.accepted


# --- renames ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", FOUR)
def test_legacy_mtp_names_become_mtp(version: str) -> None:
    out = tr.translate_speculative_config({"method": "glm4_moe_mtp"}, version)
    assert out == {"method": "mtp"}


@pytest.mark.parametrize(
    ("model_type", "expected"),
    [
        ("deepseek_v3", "deepseek_mtp"),
        ("mimo_mtp", "deepseek_mtp"),
        ("deepseek_mtp", "deepseek_mtp"),
    ],
)
def test_mtp_before_0_11_needs_the_model_type(model_type: str, expected: str) -> None:
    cfg = {"method": "mtp", "num_speculative_tokens": 1}
    out = tr.translate_speculative_config(cfg, "0.10.0", model_type=model_type)
    assert out == {"method": expected, "num_speculative_tokens": 1}
    assert tr.translate_speculative_config({"method": "qwen3_next_mtp"}, "0.10.2") == {
        "method": "qwen3_next_mtp"
    }


def test_mtp_before_0_11_without_model_type_is_rejected() -> None:
    with pytest.raises(ConfigRejected) as exc:
        tr.translate_speculative_config({"method": "mtp"}, "0.10.0")
    assert exc.value.key == "method" and "deepseek_mtp" in exc.value.accepted
    assert "predates" in str(exc.value)
    with pytest.raises(ConfigRejected):  # qwen3_next_mtp arrived in 0.10.2
        tr.translate_speculative_config({"method": "qwen3_next_mtp"}, "0.10.0")


@pytest.mark.parametrize(
    ("given", "version", "expected"),
    [
        ({"rejection_sample_method": "strict"}, "0.33.0", {"rejection_sample_method": "standard"}),
        (
            {"rejection_sample_method": "probabilistic"},
            "0.33.0",
            {"rejection_sample_method": "standard", "draft_sample_method": "probabilistic"},
        ),
        (
            {"rejection_sample_method": "probabilistic"},
            "0.21.0",
            {"rejection_sample_method": "standard", "draft_sample_method": "gumbel"},
        ),
        ({"rejection_sample_method": "standard"}, "0.20.2", {"rejection_sample_method": "strict"}),
        (
            {"rejection_sample_method": "standard", "draft_sample_method": "probabilistic"},
            "0.20.2",
            {"rejection_sample_method": "probabilistic"},
        ),
        ({"draft_sample_method": "gumbel"}, "0.33.0", {"draft_sample_method": "probabilistic"}),
        (
            {"rejection_sample_method": "synthetic"},
            "0.19.1",
            {"rejection_sample_method": "synthetic"},
        ),
    ],
)
def test_rejection_sampling_renames(
    given: dict[str, Any], version: str, expected: dict[str, Any]
) -> None:
    assert tr.translate_speculative_config(given, version) == expected


@pytest.mark.parametrize(
    ("given", "version", "expected"),
    [
        (
            {"encoder_cudagraph_max_images_per_batch": 4},
            "0.20.2",
            {"encoder_cudagraph_max_vision_items_per_batch": 4},
        ),
        (
            {"encoder_cudagraph_max_vision_items_per_batch": 4},
            "0.19.1",
            {"encoder_cudagraph_max_images_per_batch": 4},
        ),
        ({"level": 3}, "0.33.0", {"mode": 3}),
        ({"mode": 3}, "0.11.0", {"level": 3}),
        ({"mode": "VLLM_COMPILE"}, "0.11.0", {"level": "PIECEWISE"}),
        ({"level": 3}, "0.17.1", {"level": 3}),  # 0.11.2-0.17.1 take both names
        ({"cudagraph_mode": "full_decode_only"}, "0.20.2", {"cudagraph_mode": "FULL_DECODE_ONLY"}),
        ({"cudagraph_mode": "NONE"}, "0.10.0", {"use_cudagraph": False}),
        ({"cudagraph_mode": "FULL"}, "0.10.0", {"use_cudagraph": True, "full_cuda_graph": True}),
        ({"use_cudagraph": False}, "0.33.0", {"cudagraph_mode": "NONE"}),
        ({"full_cuda_graph": True}, "0.33.0", {"cudagraph_mode": "FULL"}),
        ({"use_cudagraph": True}, "0.11.0", {"use_cudagraph": True}),
    ],
)
def test_compilation_renames(given: dict[str, Any], version: str, expected: dict[str, Any]) -> None:
    assert tr.translate_compilation_config(given, version) == expected


def test_dashed_keys_are_normalised_like_vllm_does() -> None:
    out = tr.translate_speculative_config({"num-speculative-tokens": 2}, "0.17.1")
    assert out == {"num_speculative_tokens": 2}


@pytest.mark.parametrize("version", cat.releases())
def test_keys_every_release_has_pass_unchanged(version: str) -> None:
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    assert tr.translate_speculative_config(spec, version) == spec
    comp = {"cudagraph_capture_sizes": [1, 2, 4, 8]}
    assert tr.translate_compilation_config(comp, version) == comp


# --- rejections ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("translate", "cfg", "version", "key"),
    [
        (tr.translate_speculative_config, {"method": "dflash"}, "0.17.1", "method"),
        (tr.translate_speculative_config, {"method": "medusa"}, "0.33.0", "method"),
        (
            tr.translate_speculative_config,
            {"disable_by_batch_size": 4},
            "0.20.2",
            "disable_by_batch_size",
        ),
        (
            tr.translate_speculative_config,
            {"rejection_sample_method": "fly"},
            "0.20.2",
            "rejection_sample_method",
        ),
        (
            tr.translate_speculative_config,
            {"rejection_sample_method": "standard"},
            "0.11.0",
            "rejection_sample_method",
        ),
        (
            tr.translate_speculative_config,
            {"synthetic_acceptance_rate": 0.5},
            "0.20.2",
            "synthetic_acceptance_rate",
        ),
        (
            tr.translate_compilation_config,
            {"cudagraph_mm_encoder": True},
            "0.17.1",
            "cudagraph_mm_encoder",
        ),
        (
            tr.translate_compilation_config,
            {"cudagraph_mode": "SOMETIMES"},
            "0.33.0",
            "cudagraph_mode",
        ),
        (
            tr.translate_compilation_config,
            {"cudagraph_mode": "FULL_AND_PIECEWISE"},
            "0.10.0",
            "cudagraph_mode",
        ),
        (
            tr.translate_compilation_config,
            {"cudagraph_mode": "FULL", "use_cudagraph": True},
            "0.10.1.1",
            "use_cudagraph",
        ),
        (tr.translate_compilation_config, {"mode": 7}, "0.33.0", "mode"),
    ],
)
def test_rejections_name_the_key_and_list_accepted(
    translate: Any, cfg: dict[str, Any], version: str, key: str
) -> None:
    with pytest.raises(ConfigRejected) as exc:
        translate(cfg, version)
    err = exc.value
    assert err.key == key and err.version == version and err.accepted
    message = str(err)
    assert key in message and version in message
    assert ", ".join(err.accepted) in message


def test_unknown_key_rejection_lists_the_release_keys() -> None:
    with pytest.raises(ConfigRejected) as exc:
        tr.translate_speculative_config({"speculative_token_tree": "[(0,)]"}, "0.33.0")
    assert exc.value.accepted == cat.spec_config_keys("0.33.0")
    assert "accepted keys: " in str(exc.value)


def test_engine_args_checked_per_release() -> None:
    assert tr.check_engine_args({"spec_method": "mtp"}, "0.33.0") == {"spec_method": "mtp"}
    with pytest.raises(ConfigRejected) as exc:
        tr.check_engine_args({"enforce_eager": True, "spec_method": "mtp"}, "0.17.1")
    assert exc.value.key == "spec_method" and exc.value.section == "engine argument"


def test_rejected_is_a_value_error() -> None:
    assert issubclass(ConfigRejected, ValueError)
