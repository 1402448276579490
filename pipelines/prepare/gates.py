"""Stage `prepare`: the length and heuristic gates (`processing.filters`)."""

from __future__ import annotations

from datatrove.data import Document
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.pipelines.runtime.datatrove_compat import CountedFilter
from mixture.text.gates import gate_counts


class Gates(CountedFilter):
    """Length and heuristic filters; each drop is recorded with the filter's name as its reason."""

    name = "length and heuristic gates"

    def __init__(self, min_chars: int, max_chars: int, min_words: int, max_symbol_ratio: float,
                 max_duplicate_line_ratio: float, exclusion_writer: DiskWriter | None = None):
        super().__init__(exclusion_writer)
        self.min_chars, self.max_chars, self.min_words = min_chars, max_chars, min_words
        self.max_symbol_ratio, self.max_dup_lines = max_symbol_ratio, max_duplicate_line_ratio

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        """Keep, or (False, the filter's name) with the measured value against its limit in `drop_detail`."""
        text = doc.text
        n = len(text)
        if n < self.min_chars:
            return self._drop(doc, "min_chars", f"{n:,} characters, under the minimum of {self.min_chars:,}")
        if n > self.max_chars:
            return self._drop(doc, "max_chars", f"{n:,} characters, over the maximum of {self.max_chars:,}")
        few_words, symbols, head, lines, repeated = gate_counts(text, self.min_words)
        if few_words:
            return self._drop(doc, "min_words", f"fewer than {self.min_words} words")
        if symbols / max(1, head) > self.max_symbol_ratio:
            return self._drop(doc, "symbol_ratio", f"symbol ratio {symbols / max(1, head):.3f} ({symbols:,} of "
                                                   f"{head:,} characters), over the limit of {self.max_symbol_ratio}")
        if lines >= 10 and repeated / lines > self.max_dup_lines:
            return self._drop(doc, "duplicate_lines", f"repeated lines {repeated / lines:.3f} ({repeated:,} of "
                                                      f"{lines:,} non-blank lines), over the limit of "
                                                      f"{self.max_dup_lines}")
        return True

    @staticmethod
    def _drop(doc: Document, reason: str, measured: str) -> tuple[bool, str]:
        doc.metadata["drop_detail"] = f"{reason}: {measured}"
        return False, reason
