"""Where a report's code and tables are (parse.document.markdown): fences as GitHub renders
them, read once from markdown-it-py's block tokens."""

from __future__ import annotations

from triagebot.parse.document import INDENTED, build, read_layout


def _layout(text: str):  # type: ignore[no-untyped-def]
    return read_layout(text.split("\n"))


def test_fences_inside_lists_and_quotes_are_code() -> None:
    layout = _layout("1. run:\n   ```bash\n   vllm serve m\n   ```\n> ```python\n> LLM()\n> ```\n"
                     "prose")
    assert [layout.language(i) for i in range(8)] == [None, "bash", "bash", "bash", "python",
                                                      "python", "python", None]
    assert all(b.closed for b in layout.blocks)


def test_indented_code_is_code_but_not_a_fence() -> None:
    layout = _layout("para\n\n    vllm serve m --tp 2\n\nmore")
    assert layout.language(2) == INDENTED and not layout.in_fence(2)
    assert layout.is_text(0) and layout.is_text(4)


def test_an_open_fence_runs_to_the_end_unless_a_section_follows() -> None:
    assert not _layout("a\n```\nlog line\nlog line").blocks[0].closed
    assert _layout("a\n```\nlog line\nlog line").language(3) == ""
    # An excerpt cut inside a fence above the reporter's next section.
    layout = _layout("```bash\nvllm serve m\n\n## Motivation\nMTP is slower\n\n| a | b |\n"
                     "|---|---|\n| 1 | 2 |")
    assert layout.language(1) == "bash" and layout.is_text(3) and layout.is_text(4)
    assert layout.tables[0].rows == ((8, ("1", "2")),)  # read on, lines counted in place


def test_pipe_tables_come_with_their_cells() -> None:
    layout = _layout("| arm | tok/s |\n|---|---|\n| no spec | 410 |\n| MTP | 380 |")
    (table,) = layout.tables
    assert table.header == ("arm", "tok/s")
    assert table.rows == ((2, ("no spec", "410")), (3, ("MTP", "380")))


def test_a_spreadsheet_paste_is_not_a_markdown_table() -> None:
    # Tab-separated rows and tables without a |---| rule are read by parse.prose and
    # parse.results themselves.
    assert _layout("K\tEagle 1\tEagle 3\n2\t2.1\t2.36").tables == ()


def test_the_document_reads_its_layout_once_over_the_post() -> None:
    doc = build("```\ncode\n```\ntext")
    assert doc.layout is doc.layout and doc.layout.language(1) == ""


def test_deep_nesting_reads_as_text_without_raising() -> None:
    layout = _layout("> " * 3000 + "x")
    assert layout.is_text(0)
