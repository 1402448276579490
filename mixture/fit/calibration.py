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


MIN_SHAPE_DOCS = 8  # a smaller group cannot place its own median and spread: it takes its content type's map


def _centre_spread(raw: np.ndarray) -> tuple[float, float]:
    """(median, interquartile range) of a group's raw scores; the spread falls back to the 10-90 % range (scaled to
    an IQR's size) and then to a tiny constant when ties make it 0."""
    q10, q25, q50, q75, q90 = np.quantile(raw, [0.1, 0.25, 0.5, 0.75, 0.9])
    spread = q75 - q25
    if spread <= 1e-9:
        spread = (q90 - q10) * (1.349 / 2.563)  # the IQR of a normal law with this 10-90 % range
    return float(q50), float(max(spread, 1e-6))


def _shape(groups: list[np.ndarray]) -> np.ndarray:
    """The standard quantile shape of some groups: each group's quantile function centred on its median and divided
    by its spread, averaged over the groups with equal weight (a Wasserstein barycentre), so no language's share of
    the sample weighs on it."""
    levels = np.linspace(0, 1, KNOTS)
    standard = []
    for g in groups:
        centre, spread = _centre_spread(g)
        standard.append((np.quantile(g, levels) - centre) / spread)
    return np.mean(standard, axis=0)


def fit_group_calibration(raw: np.ndarray, types: np.ndarray, languages: np.ndarray, min_docs: int) -> dict[str, dict]:
    """For each (content type, language) group of the sample, a quantile map that does not borrow another
    language's placement (docs/build.md, Language):

    - `map: own`: at least `min_docs` documents, its own empirical quantiles;
    - `map: shape`: from MIN_SHAPE_DOCS to `min_docs`, its own median and interquartile range, the shape between
      them pooled over the groups with a map of their own (those of its content type; of every type when its type
      has none), each group standardised by its own median and spread and weighted equally. Which other languages
      are in the corpus moves only the shape, never where the group's scores sit, so its best documents reach the
      top bucket and its worst the bottom in about the edges' proportions;
    - `map: content_type`: fewer than MIN_SHAPE_DOCS (or no group has a map of its own), its content type's map.

    `fallback` is true for every group under `min_docs`. So a language's best text reaches the top bucket even when
    its raw scores sit below the language that dominates its content type."""
    keys = sorted(set(zip(types.tolist(), languages.tolist(), strict=True)))
    raw_of = {key: raw[(types == key[0]) & (languages == key[1])] for key in keys}
    own = {key: g for key, g in raw_of.items() if len(g) >= min_docs}
    out = {}
    for ct, lang in keys:
        group = raw_of[(ct, lang)]
        entry: dict = {"content_type": ct, "language": lang, "n": int(len(group)), "fallback": len(group) < min_docs}
        if not entry["fallback"]:
            entry.update(map="own", knots=[float(k) for k in np.quantile(group, np.linspace(0, 1, KNOTS))])
        elif len(group) >= MIN_SHAPE_DOCS and own:
            donors = sorted(key for key in own if key[0] == ct) or sorted(own)
            centre, spread = _centre_spread(group)
            knots = centre + spread * _shape([own[key] for key in donors])
            entry.update(map="shape", knots=[float(k) for k in np.maximum.accumulate(knots)],
                         shape_groups=[group_key(*key) for key in donors], centre=centre, spread=spread)
        else:
            entry["map"] = "content_type"
        out[group_key(ct, lang)] = entry
    return out


def group_knots(calibration: dict[str, TypeCalibration], groups: dict[str, GroupCalibration], content_type: str,
                language: str) -> list[float]:
    """The quantile map a document of (content type, language) is calibrated with: its group's (own or shape),
    else its type's."""
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
