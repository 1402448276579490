"""Monotone calibration of raw quality scores (empirical quantile map) per content type and per (content type,
language) group, and bucket cutoffs."""

from __future__ import annotations

import numpy as np

from mixture.store.model_files import GroupCalibration, TypeCalibration

KNOTS = 101
MIN_DOCS = 50


def fit_calibration(raw_by_type: dict[str, np.ndarray], content_types: tuple[str, ...]) -> dict[str, dict]:
    """For each content type: raw-score quantiles at 0, .01, …, 1. Types with few docs use the pooled map."""
    pooled = np.concatenate([v for v in raw_by_type.values() if len(v)]) if raw_by_type else np.array([0.0, 1.0])
    levels = np.linspace(0, 1, KNOTS)
    out = {}
    for ct in content_types:
        raw = raw_by_type.get(ct, np.array([]))
        fallback = len(raw) < MIN_DOCS
        knots = np.quantile(pooled if fallback else raw, levels)
        out[ct] = {"knots": [float(k) for k in knots], "n": int(len(raw)), "pooled": bool(fallback)}
    return out


def group_key(content_type: str, language: str) -> str:
    """The name of a (content type, language) calibration group: `prose/fr`."""
    return f"{content_type}/{language}"


def fit_group_calibration(raw: np.ndarray, types: np.ndarray, languages: np.ndarray, min_docs: int) -> dict[str, dict]:
    """For each (content type, language) group of the sample: its own quantile map when it has at least
    `min_docs` documents (`fallback: false`), else only its size (`fallback: true`: its documents use their
    content type's map). So a language's best text reaches the top bucket even when its raw scores sit below
    the language that dominates its content type."""
    out = {}
    for ct, lang in sorted(set(zip(types.tolist(), languages.tolist(), strict=True))):
        group = raw[(types == ct) & (languages == lang)]
        entry: dict = {"content_type": ct, "language": lang, "n": int(len(group)), "fallback": len(group) < min_docs}
        if not entry["fallback"]:
            entry["knots"] = [float(k) for k in np.quantile(group, np.linspace(0, 1, KNOTS))]
        out[group_key(ct, lang)] = entry
    return out


def group_knots(calibration: dict[str, TypeCalibration], groups: dict[str, GroupCalibration], content_type: str,
                language: str) -> list[float]:
    """The quantile map a document of (content type, language) is calibrated with: its group's, else its type's."""
    g = groups.get(group_key(content_type, language))
    return g.knots if g and g.knots is not None else calibration[content_type].knots


def calibrate(raw: np.ndarray, knots: list[float]) -> np.ndarray:
    """Calibrated score = position of `raw` within the fitted quantiles (monotone, in [0, 1])."""
    k = np.asarray(knots)
    levels = np.linspace(0, 1, len(k))
    # average left and right interpolation so runs of tied knots map to their middle
    lo = np.interp(raw, k, levels, left=0.0, right=1.0)
    hi = 1.0 - np.interp(-np.asarray(raw), -k[::-1], levels, left=0.0, right=1.0)
    return np.clip((lo + hi) / 2, 0.0, 1.0)


def raw_cutoffs(knots: list[float], edges: list[float]) -> list[float]:
    """Raw scores that correspond to the calibrated bucket edges."""
    return [float(x) for x in np.interp(edges, np.linspace(0, 1, len(knots)), knots)]


def bucket(calibrated: np.ndarray, edges: list[float]) -> np.ndarray:
    return np.searchsorted(np.asarray(edges), calibrated, side="right").astype(np.int8)
