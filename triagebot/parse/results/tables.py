"""The results scanner's reading of tables: markdown and aligned columns, header rows
that name the arms, single rows of numbers.

The cells are split line by line, not taken from markdown tables: benchmark output is
columns aligned with spaces, grid tables drawn with `+---+`, and rows pasted from a
spreadsheet, none of which markdown calls a table.
"""

from __future__ import annotations

from triagebot.parse.results.cells import (
    classify_header,
    clean_label,
    header_arms,
    is_code,
    is_separator,
    norm_label,
    parse_cell,
    row_metric,
    row_width,
    split_cells,
)
from triagebot.parse.results.tools import Table, ToolReader
from triagebot.parse.results.words import EMPTY_CELLS, LOOKBACK_LINES, MAX_LINE, Metric


class TableReader(ToolReader):
    """Tables of results, whatever their layout."""

    # -- 2. labelled rows and tables ----------------------------------------------------

    def _row(self, idx: int, line: str) -> bool:
        if is_separator(line):
            return False
        cells, kind = split_cells(line)
        # A table's last columns may be words (`| Notes |`): they are neither label nor value.
        notes = _notes_columns(cells) if kind in ("pipe", "tab") else 0
        cells = cells[:len(cells) - notes]
        # The values are the longest run of numeric cells at the end; the rest is the label.
        values: list[tuple[float, str] | None] = []
        cut = len(cells)
        while cut > 0:
            cell = cells[cut - 1]
            parsed = parse_cell(cell)
            if parsed is None and cell.strip().lower() not in EMPTY_CELLS:
                break
            values.append(parsed)
            cut -= 1
        values.reverse()
        label_cells = [c for c in cells[:cut] if c.strip()]
        if not label_cells or all(v is None for v in values):
            return False
        label = " ".join(label_cells)
        if not any(c.isalpha() for c in label):
            return False
        known = row_metric(label)
        table_kind = kind in ("pipe", "tab")
        if known is None and table_kind and len(values) >= 2:
            # `| Mean TTFT | 81.8 ms | 76.8 ms |`: a metric per row, an arm per column.
            metric = classify_header(label)
            if metric is not None and metric.name != "speedup":
                known = (metric, metric.name)
        if len(values) == 1 and (known is not None or not table_kind):
            return self._single_row(idx, label, known, values[0])
        if is_code(line):
            return False
        header = self._table_header(idx, len(values))
        if known is not None:
            arms = header_arms(header, len(values))
            for pos, value in enumerate(values):
                if value is not None and not (arms and arms[pos] is None):
                    arm = arms[pos] if arms else None
                    self._emit(idx, known[0], value[0], arm, name=known[1], percent=value[1] == "%")
            return True
        if not table_kind:
            return False
        # Row-oriented table: the row label is the arm, the headers name the metrics.
        columns = self._columns(header, len(values), notes)
        if columns is None:
            return True
        arm = clean_label(" / ".join(label_cells)) or None
        for metric, value in zip(columns, values, strict=True):
            if metric is not None and value is not None:
                self._emit(idx, metric, value[0], arm, percent=value[1] == "%")
        return True

    def _single_row(
        self,
        idx: int,
        label: str,
        known: tuple[Metric, str] | None,
        value: tuple[float, str] | None,
    ) -> bool:
        if known is None:
            return False
        is_position = known[0].name == "per_position_acceptance"
        if is_position and not self.in_block and not norm_label(label).startswith("accept"):
            return False  # "Position 0:" means nothing outside a result block
        if value is not None:
            self._emit(
                idx, known[0], value[0], self._arm_here(idx), name=known[1], percent=value[1] == "%"
            )
        return True

    def _columns(self, header: str, width: int, notes: int = 0) -> list[Metric | None] | None:
        table = self.table
        if table is not None and table.columns is not None:
            return table.columns
        cells = split_cells(header)[0] if header else []
        cells = cells[:len(cells) - notes]
        if len(cells) < width:
            return None
        columns = [classify_header(cell) for cell in cells[len(cells) - width :]]
        if table is not None:
            table.columns = columns
        return columns

    def _table_header(self, idx: int, width: int) -> str:
        table = self.table
        if table is not None and table.width == width and self._adjacent(table.last_row, idx):
            table.last_row = idx
            return table.header
        # Walk up over the rows of this table (rows the prefilter skipped included) to the
        # line above its first row: that line names the columns.
        header = ""
        stop = max(-1, idx - LOOKBACK_LINES)
        for j in range(idx - 1, stop, -1):
            text = self.lines[j][:MAX_LINE]
            if is_separator(text) or row_width(text) == width:
                continue
            header = text
            break
        self.table = Table(last_row=idx, header=header, width=width)
        return header

    def _adjacent(self, last: int, idx: int) -> bool:
        if idx - last > LOOKBACK_LINES:
            return False
        return all(
            is_separator(self.lines[j]) or row_width(self.lines[j][:MAX_LINE]) > 0
            for j in range(last + 1, idx)
        )


def _notes_columns(cells: list[str]) -> int:
    """How many of a table row's last cells (at most two) are words after its numbers: a
    notes column beside the figures, `| no-spec | 56.5 | tuned batch |`."""
    n = 0
    while n < 2 and len(cells) - n > 2 and cells[-1 - n].strip() and \
            parse_cell(cells[-1 - n]) is None and \
            cells[-1 - n].strip().lower() not in EMPTY_CELLS:
        n += 1
    if n and parse_cell(cells[-1 - n]) is not None:
        return n
    return 0
