"""What every stage of the parser shares: the quote-aware bracket scanner, the `Fact` an
extractor hands on, canonical spellings of values, and the vocabulary of settings."""

from __future__ import annotations

from triagebot.parse.common.brackets import CLOSERS, OPENERS, brackets
from triagebot.parse.common.facts import Fact, Facts
from triagebot.parse.common.normalize import (
    KNOWN_ORGS,
    SPEC_METHODS,
    VERSION_PATTERN,
    canonical_gpu,
    canonical_method,
    canonical_mode,
    canonical_model,
    canonical_version,
    version_key,
)
from triagebot.parse.common.patterns import PREFILTERED, fast
from triagebot.parse.common.vocabulary import (
    CLIENT_PROGRAMS,
    ENGINE_PROGRAMS,
    FLAGS,
    KWARGS,
    PROGRAM_ENGINE,
    SPEC_CONFIG_KEYS,
    as_bool,
    as_float,
    as_int,
    flag_setting,
    norm_flag,
)

__all__ = [
    "CLIENT_PROGRAMS",
    "CLOSERS",
    "ENGINE_PROGRAMS",
    "FLAGS",
    "KNOWN_ORGS",
    "KWARGS",
    "OPENERS",
    "PREFILTERED",
    "PROGRAM_ENGINE",
    "SPEC_CONFIG_KEYS",
    "SPEC_METHODS",
    "VERSION_PATTERN",
    "Fact",
    "Facts",
    "as_bool",
    "as_float",
    "as_int",
    "brackets",
    "canonical_gpu",
    "canonical_method",
    "canonical_mode",
    "canonical_model",
    "canonical_version",
    "fast",
    "flag_setting",
    "norm_flag",
    "version_key",
]
