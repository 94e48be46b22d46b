"""One-line commands split by the standard library's shlex, and what stays with our own
reader (parse.commands.words)."""

from __future__ import annotations

from triagebot.parse.commands import find_invocations
from triagebot.parse.commands.words import split_words, tokenize


def _texts(text: str, env: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(w.text, w.kind) for w in split_words(text, env or {})]


def test_posix_quotes_operators_and_redirections() -> None:
    words = _texts("""vllm serve m --speculative-config '{"method": "mtp"}' 2>&1 | tee log""")
    assert words == [("vllm", "word"), ("serve", "word"), ("m", "word"),
                     ("--speculative-config", "word"), ('{"method": "mtp"}', "word"),
                     (">&", "redir"), ("|", "op"), ("tee", "word"), ("log", "word")]


def test_a_redirection_target_is_not_an_argument() -> None:
    words = [t for t, kind in _texts("vllm serve m --port 8000 > server.log &") if kind == "word"]
    assert words == ["vllm", "serve", "m", "--port", "8000"]


def test_what_shlex_cannot_do_goes_to_our_reader() -> None:
    env = {"K": "4"}
    # `${VAR:-3}` and `$VAR` set earlier in the report.
    assert [w.text for w in split_words("vllm serve m --tp ${TP:-2} --k $K", env)] == \
        [w.text for w in tokenize("vllm serve m --tp ${TP:-2} --k $K", env)] == \
        ["vllm", "serve", "m", "--tp", "2", "--k", "4"]
    # A JSON config pasted with its closing quote missing.
    broken = """vllm serve m --speculative-config '{"method": "eagle3"} --tp 2"""
    assert [w.text for w in split_words(broken, {})] == [w.text for w in tokenize(broken, {})]


def test_inline_commands_in_prose_are_read_with_shlex_rules() -> None:
    (inv,) = find_invocations(["Run `vllm serve org/m --tp 2 --served-model-name \"a b\"` now."])
    assert inv.value("--served-model-name") == "a b" and inv.value("--tp") == "2"
