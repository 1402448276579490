"""What the fit writes depends on beyond the spec: the versions of its label and calibration methods and of the
stop-word lists; the canonical spec records them (`fit_implementation`), so the stage keys of `fit` cover them."""

from __future__ import annotations

from importlib.metadata import version

# raise when a method changes what a finished fit would write
LABELS_VERSION = 2  # 2: distinctive words and phrases, no stop word or keyword, NPMI confidence, names, languages
CALIBRATION_VERSION = 2  # 2: a small group's own median and spread with a pooled shape (map: shape)


def fit_implementation() -> dict[str, int | str]:
    return {"labels": LABELS_VERSION, "calibration": CALIBRATION_VERSION,
            "stopwords": f"stopwordsiso {version('stopwordsiso')}"}
