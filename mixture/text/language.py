"""Language of a document: Google's CLD2 (pycld2; its model is compiled into the package, nothing is downloaded) or
a local fastText language-identification model; ISO 639-1 codes, `und` when unsure (docs/build.md, Language)."""

from __future__ import annotations

import re
from collections.abc import Callable

UNDETERMINED = "und"
HEAD = 2000  # characters read: measured on the Debian corpus, more text changes < 0.1 % of the answers
# CLD2's codes that are not ISO 639-1 (old codes, script variants, its own placeholders)
_ALIASES = {"iw": "he", "jw": "jv", "in": "id", "ji": "yi", "mo": "ro", "sh": "sr", "un": UNDETERMINED,
            "xxx": UNDETERMINED}
# C0/C1 controls (but tab, newline, return), noncharacters and lone surrogates: CLD2 calls them invalid UTF-8
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff\ud800-\udfff]")


def iso_code(code: str) -> str:
    """ISO 639-1 for a detector's code (`zh-Hant` → `zh`, `iw` → `he`, `__label__en` → `en`); a language with
    no two-letter code keeps its ISO 639-2/3 code (`haw`, `ceb`); an unknown one is `und`."""
    code = code.removeprefix("__label__")
    if not code or code.startswith("xx-"):
        return UNDETERMINED
    base = code.replace("_", "-").split("-")[0].lower()
    return _ALIASES.get(base, base)


def _cld2(text: str) -> tuple[str, float]:
    """(code, its share of the text CLD2 classified, × 0.75 when CLD2 does not call the answer reliable). CLD2 runs
    without best effort: on a text too short or too mixed to place it says unknown (`und`, score 0) rather than
    guess (with best effort 4.7 % of fortunes under 300 characters got a wrong language, without it 1.6 %;
    docs/performance.md, Language identification)."""
    import pycld2

    try:
        reliable, _, details = pycld2.detect(text)
    except (pycld2.error, UnicodeError):
        try:
            reliable, _, details = pycld2.detect(_NOT_TEXT.sub(" ", text))
        except (pycld2.error, UnicodeError):
            return UNDETERMINED, 0.0
    _, code, percent, _ = details[0]
    if iso_code(code) == UNDETERMINED:
        return UNDETERMINED, 0.0
    classified = sum(d[2] for d in details if d[1] != "un")  # CLD2 leaves out digits, symbols and markup
    return iso_code(code), percent / max(1, classified) * (1.0 if reliable else 0.75)


def _fasttext(path: str) -> Callable[[str], tuple[str, float]]:
    import os

    import fasttext

    if not os.path.isfile(path):
        raise FileNotFoundError(f"processing.language.model: no fastText model at {path}; give the path of a local "
                                "language-identification model (e.g. lid.176.bin) or use cld2")
    model = fasttext.load_model(path)

    def detect(text: str) -> tuple[str, float]:
        labels, probs = model.predict(text.replace("\n", " "), k=1)
        return (iso_code(labels[0]), float(probs[0])) if len(labels) else (UNDETERMINED, 0.0)

    return detect


class LanguageIdentifier:
    """`identify(text) -> (language, score)`: the detector's answer on the first HEAD characters, `und` with its
    score when the score is below `min_score`. `model`: `cld2`, or `fasttext:<path>` of a local fastText model
    whose labels are `__label__<code>` (e.g. lid.176.bin, the FineWeb/datatrove model)."""

    def __init__(self, model: str = "cld2", min_score: float = 0.5):
        self.model, self.min_score = model, min_score
        self._detect: Callable[[str], tuple[str, float]] | None = None

    def _detector(self) -> Callable[[str], tuple[str, float]]:
        if self._detect is None:
            if self.model == "cld2":
                self._detect = _cld2
            elif self.model.startswith("fasttext:"):
                self._detect = _fasttext(self.model.removeprefix("fasttext:"))
            else:
                raise ValueError(f"language model {self.model!r}: expected cld2 or fasttext:<path of a model>")
        return self._detect

    def identify(self, text: str) -> tuple[str, float]:
        code, score = self._detector()(text[:HEAD])
        return (code if score >= self.min_score else UNDETERMINED), round(score, 4)
