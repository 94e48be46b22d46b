"""refresh-vllm on hand-made wheels: extraction, caching, failures. Never downloads."""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from triagebot.engines import vllm_refresh as refresh_mod
from triagebot.engines.vllm_catalog import ReleaseTable
from triagebot.engines.vllm_extract import ExtractError, extract_release
from triagebot.engines.vllm_refresh import default_versions, refresh

# A toy release in the 0.11+ layout. Written for these tests (not vLLM code); it only
# has the shapes the extractor must understand.
SPECULATIVE_PY = """
from dataclasses import dataclass, field
from typing import ClassVar, Literal

MTPModelTypes = Literal["deepseek_mtp", "toy_mtp", "mtp"]
EagleModelTypes = Literal["eagle", "eagle3", MTPModelTypes]
SpeculativeMethod = Literal["ngram", "draft_model", EagleModelTypes]
RejectionSampleMethod = Literal["standard", "synthetic"]


@dataclass
class SpeculativeConfig:
    method: SpeculativeMethod | None = None
    num_speculative_tokens: int | None = None
    rejection_sample_method: RejectionSampleMethod = "standard"
    draft_sample_method: "Literal['greedy', 'probabilistic']" = "greedy"
    quantization: Literal["fp8"] | str | None = None
    target_model_config: object = field(default=None, init=False)
    _hidden: int = 0
    registry: ClassVar[dict] = {}

    @staticmethod
    def hf_config_override(hf_config):
        if hf_config.model_type in ("toy", "toy_v2"):
            hf_config.model_type = "toy_mtp"
        return hf_config
"""

COMPILATION_PY = """
import enum
from dataclasses import dataclass


class CompilationMode(enum.IntEnum):
    NONE = 0
    STOCK_TORCH_COMPILE = 1
    DYNAMO_TRACE_ONCE = 2
    VLLM_COMPILE = 3


class CUDAGraphMode(enum.Enum):
    NONE = 0
    PIECEWISE = 1
    FULL = 2
    FULL_AND_PIECEWISE = (FULL, PIECEWISE)


@dataclass
class CompilationConfig:
    mode: CompilationMode | None = None
    cudagraph_mode: CUDAGraphMode | None = None
    encoder_cudagraph_max_vision_items_per_batch: int = 0
"""

ARG_UTILS_PY = """
from dataclasses import dataclass


@dataclass
class _Base:
    model: str = "m"


@dataclass
class EngineArgs(_Base):
    speculative_config: dict | None = None
    enforce_eager: bool = False
"""

ENVS_PY = """
environment_variables: dict = {
    "VLLM_USE_V2_MODEL_RUNNER": lambda: None,
    "VLLM_LOGGING_LEVEL": lambda: "INFO",
}
"""

VERSION_PY = "__version__ = version = '0.99.0'\n__commit_id__ = commit_id = 'gabc1234'\n"

# The 0.10.0 layout: everything in vllm/config.py, MTP named per model type and
# chosen by auto-detection branches.
OLD_CONFIG_PY = """
from dataclasses import dataclass
from typing import Literal, Optional

SpeculativeMethod = Literal["ngram", "eagle", "deepseek_mtp"]


@dataclass
class SpeculativeConfig:
    method: Optional[SpeculativeMethod] = None
    num_speculative_tokens: int = None
    disable_by_batch_size: Optional[int] = None

    def __post_init__(self):
        if self.draft_model_config.hf_config.model_type in ("deepseek_mtp", "mimo_mtp"):
            self.method = "deepseek_mtp"


class CompilationLevel:
    NO_COMPILATION = 0
    DYNAMO_AS_IS = 1


@dataclass
class CompilationConfig:
    level: Optional[int] = None
    use_cudagraph: bool = True
    full_cuda_graph: bool = False
"""


def make_wheel(directory: Path, version: str, files: dict[str, str], build: str = "") -> Path:
    build_tag = f"-{build}" if build else ""
    path = directory / f"vllm-{version}{build_tag}-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def new_layout(mm_bench: bool = True) -> dict[str, str]:
    files = {
        "vllm/config/speculative.py": SPECULATIVE_PY,
        "vllm/config/compilation.py": COMPILATION_PY,
        "vllm/engine/arg_utils.py": ARG_UTILS_PY,
        "vllm/envs.py": ENVS_PY,
        "vllm/_version.py": VERSION_PY,
    }
    if mm_bench:
        files["vllm/benchmarks/mm_processor.py"] = "def main(args):\n    pass\n"
    return files


def old_layout() -> dict[str, str]:
    return {
        "vllm/config.py": OLD_CONFIG_PY,
        "vllm/engine/arg_utils.py": ARG_UTILS_PY,
        "vllm/envs.py": ENVS_PY,
    }


# --- extraction -------------------------------------------------------------------------


def test_extracts_init_fields_only(tmp_path: Path) -> None:
    info = extract_release(make_wheel(tmp_path, "0.99.0", new_layout()))
    # init=False, private and ClassVar fields are not constructor keys.
    assert info.spec_config_keys == [
        "draft_sample_method",
        "method",
        "num_speculative_tokens",
        "quantization",
        "rejection_sample_method",
    ]
    assert info.compilation_config_keys == [
        "cudagraph_mode",
        "encoder_cudagraph_max_vision_items_per_batch",
        "mode",
    ]
    assert info.engine_arg_keys == ["enforce_eager", "model", "speculative_config"]  # + base


def test_extracts_literals_through_aliases_and_forward_refs(tmp_path: Path) -> None:
    info = extract_release(make_wheel(tmp_path, "0.99.0", new_layout()))
    assert info.spec_literals["method"] == [
        "deepseek_mtp",
        "draft_model",
        "eagle",
        "eagle3",
        "mtp",
        "ngram",
        "toy_mtp",
    ]
    assert info.spec_literals["rejection_sample_method"] == ["standard", "synthetic"]
    assert info.spec_literals["draft_sample_method"] == ["greedy", "probabilistic"]
    # `Literal["fp8"] | str` takes any string: listing "fp8" would reject valid values.
    assert "quantization" not in info.spec_literals


def test_extracts_mtp_enums_env_and_provenance(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "0.99.0", new_layout())
    info = extract_release(wheel)
    assert info.version == "0.99.0" and info.ok
    assert info.mtp_model_types == ["deepseek_mtp", "mtp", "toy_mtp"]
    assert info.mtp_method_by_model_type["toy_mtp"] == "mtp"
    assert info.mtp_model_type_aliases == {"toy": "toy_mtp", "toy_v2": "toy_mtp"}
    assert info.enums["CUDAGraphMode"] == ["NONE", "PIECEWISE", "FULL", "FULL_AND_PIECEWISE"]
    assert info.enums["CompilationMode"][-1] == "VLLM_COMPILE"
    assert info.env_vars == ["VLLM_LOGGING_LEVEL", "VLLM_USE_V2_MODEL_RUNNER"]
    assert info.has_mm_processor_bench
    assert info.source_files["SpeculativeConfig"] == "vllm/config/speculative.py"
    assert info.wheel is not None
    assert info.wheel.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert info.wheel.filename == wheel.name
    assert info.wheel.commit == "abc1234"


def test_old_single_file_layout(tmp_path: Path) -> None:
    info = extract_release(make_wheel(tmp_path, "0.10.0", old_layout()))
    assert info.source_files["SpeculativeConfig"] == "vllm/config.py"
    assert "disable_by_batch_size" in info.spec_config_keys
    assert info.compilation_config_keys == ["full_cuda_graph", "level", "use_cudagraph"]
    # Before "mtp" the method is read off the auto-detection branches.
    assert info.mtp_method_by_model_type == {
        "deepseek_mtp": "deepseek_mtp",
        "mimo_mtp": "deepseek_mtp",
    }
    assert info.enums == {"CompilationLevel": ["NO_COMPILATION", "DYNAMO_AS_IS"]}
    assert not info.has_mm_processor_bench
    assert info.wheel is not None and info.wheel.commit is None


def test_missing_class_raises_extract_error(tmp_path: Path) -> None:
    files = new_layout()
    del files["vllm/engine/arg_utils.py"]
    with pytest.raises(ExtractError, match="EngineArgs"):
        extract_release(make_wheel(tmp_path, "0.99.0", files))


# --- refresh: cache, local wheels, failures, output ----------------------------------------


def test_refresh_offline_from_cache_records_failures(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    make_wheel(cache, "0.99.0", new_layout(), build="1")  # build tags occur on PyPI
    broken = new_layout()
    del broken["vllm/config/speculative.py"]
    make_wheel(cache, "0.98.0", broken)
    (cache / "vllm-0.97.0-cp38-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"not a zip")
    out = tmp_path / "table.json"

    table = refresh(["0.99.0", "0.98.0", "0.97.0", "0.96.0"], out, cache, offline=True)

    rel = table.releases
    assert rel["0.99.0"].ok and rel["0.99.0"].spec_config_keys
    assert not rel["0.98.0"].ok and "SpeculativeConfig" in (rel["0.98.0"].error or "")
    assert not rel["0.97.0"].ok and "BadZipFile" in (rel["0.97.0"].error or "")
    assert rel["0.96.0"].error == "no wheel in cache (offline)"
    assert ReleaseTable.model_validate_json(out.read_text()) == table


def test_refresh_output_is_sorted_and_stable(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "0.99.0", new_layout())
    out = tmp_path / "table.json"
    refresh([str(wheel)], out, tmp_path / "cache", offline=True)
    first = out.read_bytes()
    refresh([str(wheel)], out, tmp_path / "cache", offline=True)
    assert out.read_bytes() == first
    text = first.decode()
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_refresh_merges_into_existing_table(tmp_path: Path) -> None:
    out = tmp_path / "table.json"
    refresh([str(make_wheel(tmp_path, "0.10.0", old_layout()))], out, tmp_path, offline=True)
    refresh([str(make_wheel(tmp_path, "0.99.0", new_layout()))], out, tmp_path, offline=True)
    assert set(ReleaseTable.model_validate_json(out.read_text()).releases) == {"0.10.0", "0.99.0"}
    refresh(
        [str(tmp_path / "vllm-0.99.0-cp38-abi3-manylinux_2_28_x86_64.whl")],
        out,
        tmp_path,
        offline=True,
        merge=False,
    )
    assert set(ReleaseTable.model_validate_json(out.read_text()).releases) == {"0.99.0"}


def test_refresh_downloads_through_pip_when_not_cached(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    calls: list[list[str]] = []

    def fake_pip(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        spec = next(arg for arg in cmd if arg.startswith("vllm=="))
        if spec == "vllm==0.99.0":
            make_wheel(cache, "0.99.0", new_layout())
            return subprocess.CompletedProcess(cmd, 0, "Saved", "")
        err = f"ERROR: No matching distribution found for {spec}"
        return subprocess.CompletedProcess(cmd, 1, "", err)

    table = refresh(
        ["0.99.0", "0.95.0"], tmp_path / "t.json", cache, runner=fake_pip, keep_wheels=False
    )
    assert table.releases["0.99.0"].ok
    assert "not on PyPI" in (table.releases["0.95.0"].error or "")
    assert "--no-deps" in calls[0] and "--only-binary=:all:" in calls[0]
    assert not list(cache.glob("*.whl"))  # keep_wheels=False frees the disk


def test_refresh_rejects_non_release_strings(tmp_path: Path) -> None:
    table = refresh(["0.11.0; rm -rf /"], tmp_path / "t.json", tmp_path, offline=True)
    assert "not a release version" in (table.releases["0.11.0; rm -rf /"].error or "")


def test_default_versions_offline_uses_cache_names(tmp_path: Path) -> None:
    for version, build in (("0.10.0", ""), ("0.10.2", ""), ("0.21.0", "1")):
        make_wheel(tmp_path, version, {}, build=build)
    versions = default_versions(tmp_path, offline=True)
    assert {"0.10.0", "0.10.2", "0.21.0"} <= set(versions)
    assert set(refresh_mod.EXACT_RELEASES) <= set(versions)
    assert "0.25.0" in versions  # a minor with nothing cached is still listed, as X.Y.0
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))


def test_default_versions_online_parses_pip_index(tmp_path: Path) -> None:
    def fake_index(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        out = ("vllm (0.33.0)\nAvailable versions: 0.33.0, 0.17.1, 0.17.0, 0.9.2, 0.11.0rc1, "
               "0.8.4\n")
        return subprocess.CompletedProcess(cmd, 0, out, "")

    versions = default_versions(tmp_path, offline=False, run=fake_index)
    assert {"0.17.0", "0.17.1", "0.33.0"} <= set(versions)
    assert "0.9.2" in versions  # 0.9.x and 0.8.5 are as far back as vLLM's CPU build goes
    assert "0.8.4" not in versions and "0.11.0rc1" not in versions


def test_pip_timeout_is_recorded_not_raised(tmp_path: Path) -> None:
    def hung_pip(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired(cmd, 1800)

    table = refresh(["0.99.0"], tmp_path / "t.json", tmp_path / "cache", runner=hung_pip)
    assert "TimeoutExpired" in (table.releases["0.99.0"].error or "")


def test_local_wheel_with_unreadable_name_is_recorded(tmp_path: Path) -> None:
    wheel = tmp_path / "something.whl"
    wheel.write_bytes(b"")
    table = refresh([str(wheel)], tmp_path / "t.json", tmp_path / "cache", offline=True)
    assert not table.releases[str(wheel)].ok
