"""Per-language calibration of small groups: a group under group_min_docs keeps its own median and spread (map
`shape`), so where it lands does not depend on which other languages the sample holds."""

from __future__ import annotations

import numpy as np
import pytest

from mixture.fit.calibration import MIN_SHAPE_DOCS, bucket, calibrate, fit_calibration, fit_group_calibration
from mixture.store.model_files import GroupCalibration

EDGES = [0.2, 0.4, 0.6, 0.8]


def _sample(groups: dict[tuple[str, str], tuple[int, float, float]], seed: int = 0):
    rng = np.random.default_rng(seed)
    raw, types, langs = [], [], []
    for (ct, lang), (n, mean, sd) in groups.items():
        raw.append(np.clip(rng.normal(mean, sd, n), 0, 1))
        types += [ct] * n
        langs += [lang] * n
    return np.concatenate(raw), np.array(types), np.array(langs)


def _buckets(raw, types, langs, group: tuple[str, str], min_docs: int = 50) -> tuple[np.ndarray, dict]:
    groups = fit_group_calibration(raw, types, langs, min_docs)
    g = groups["/".join(group)]
    mine = raw[(types == group[0]) & (langs == group[1])]
    return bucket(calibrate(mine, g["knots"]), EDGES), g


@pytest.mark.parametrize("others", [
    {("prose", "en"): (400, 0.7, 0.08), ("prose", "de"): (200, 0.65, 0.1)},
    {("prose", "ja"): (400, 0.2, 0.05), ("prose", "zh"): (300, 0.25, 0.05)},
    {("prose", "en"): (400, 0.7, 0.08)},
])
def test_a_small_group_lands_in_every_bucket_whatever_languages_are_beside_it(others):
    """prose/ar (30 documents) sits far from every other language; with its type's map it would be all Q4 or all
    Q0 depending on the others. With its own centre and spread no bucket holds more than 40 %."""
    raw, types, langs = _sample({**others, ("prose", "ar"): (30, 0.45, 0.03)})
    q, g = _buckets(raw, types, langs, ("prose", "ar"))
    assert g["map"] == "shape" and g["fallback"] and g["n"] == 30
    assert g["shape_groups"] == sorted(f"prose/{lang}" for _, lang in others)
    shares = np.bincount(q, minlength=5) / len(q)
    assert shares.max() <= 0.4 and shares[0] > 0 and shares[4] > 0, shares
    # its median is the middle of its map, bit for bit what the others are
    assert calibrate(np.array([g["centre"]]), g["knots"])[0] == pytest.approx(0.5, abs=0.01)
    # the content type's map, what it used before, puts it at one end
    type_knots = fit_calibration({"prose": raw[types == "prose"]}, ("prose",))["prose"]["knots"]
    mine = raw[langs == "ar"]
    assert max(np.bincount(bucket(calibrate(mine, type_knots), EDGES), minlength=5) / len(mine)) > 0.4


def test_shape_comes_from_every_type_when_its_type_has_no_large_group_and_tiny_groups_take_the_type_map():
    raw, types, langs = _sample({("prose", "en"): (300, 0.6, 0.1), ("code", "ru"): (25, 0.3, 0.05),
                                 ("code", "uk"): (MIN_SHAPE_DOCS - 1, 0.3, 0.05)})
    groups = fit_group_calibration(raw, types, langs, 50)
    assert groups["prose/en"]["map"] == "own" and not groups["prose/en"]["fallback"]
    assert groups["code/ru"]["map"] == "shape" and groups["code/ru"]["shape_groups"] == ["prose/en"]
    assert groups["code/uk"]["map"] == "content_type" and "knots" not in groups["code/uk"]


def test_no_group_with_a_map_of_its_own_leaves_small_groups_on_their_type_map():
    raw, types, langs = _sample({("prose", "en"): (30, 0.6, 0.1), ("prose", "fr"): (20, 0.3, 0.05)})
    groups = fit_group_calibration(raw, types, langs, 50)
    assert {g["map"] for g in groups.values()} == {"content_type"}


def test_group_calibration_file_names_its_map_and_reads_older_files():
    knots = list(np.linspace(0, 1, 101))
    shape = GroupCalibration(content_type="prose", language="ar", n=30, fallback=True, map="shape",
                             shape_groups=["prose/en"], centre=0.4, spread=0.1, knots=knots, raw_cutoffs=[0.2] * 4)
    assert GroupCalibration.model_validate_json(shape.model_dump_json()) == shape
    # a file of older code has no map: a fallback group used its type's map, the others their own
    old = GroupCalibration.model_validate({"content_type": "prose", "language": "fr", "n": 3, "fallback": True,
                                           "raw_cutoffs": [0.2] * 4})
    assert old.map == "content_type"
    assert GroupCalibration.model_validate({"content_type": "prose", "language": "en", "n": 90, "fallback": False,
                                            "knots": knots, "raw_cutoffs": [0.2] * 4}).map == "own"
    with pytest.raises(ValueError, match="type's map"):
        GroupCalibration(content_type="prose", language="ar", n=30, fallback=True, map="shape", raw_cutoffs=[0.2] * 4)
