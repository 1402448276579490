"""partition.quality.scorer: fasttext takes the raw score from a local fastText model (trained here on the corpus)."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.dataset as ds
import pytest
import yaml

pytestmark = pytest.mark.slow


def train_model(corpus, path) -> None:
    """A tiny supervised model: reference prose is `hq`, structured data files are `lq`."""

    from mixture.demo_corpus import read

    lines = []
    for source, label in (("python-reference", "__label__hq"), ("stdlib-docstrings", "__label__hq"),
                          ("structured-data", "__label__lq"), ("licenses", "__label__lq")):
        entry = read.source_entry(corpus, source)
        for _, _, rec in read.iter_records(corpus, entry):
            if rec and isinstance(rec.get(entry["text_field"]), str):
                lines.append(f"{label} {' '.join(rec[entry['text_field']].split())[:5000]}")
    train = path.parent / "train.txt"
    train.write_text("\n".join(lines) + "\n")
    # fastText's training is not reproducible here: about half of all runs stop with "Encountered NaN" whatever the
    # seed or learning rate (measured 16 of 30 seeds at lr 0.2), and inside a long-lived process (pytest) it can
    # fail every time. So each attempt trains in a fresh process, with a new seed, until one succeeds; the test
    # checks the plumbing against whatever model was saved, not its quality.
    code = ("import sys, fasttext; fasttext.train_supervised(sys.argv[1], epoch=25, lr=0.2, wordNgrams=1, dim=16, "
            "seed=int(sys.argv[3]), thread=1, verbose=0).save_model(sys.argv[2])")
    for seed in range(25):
        run = subprocess.run([sys.executable, "-c", code, str(train), str(path), str(seed)], capture_output=True,
                             text=True, timeout=120)
        if run.returncode == 0:
            return
        assert "NaN" in run.stderr, run.stderr[-2000:]
    raise AssertionError("fastText training diverged with 25 seeds")


def test_fasttext_scorer_gives_raw_scores(demo_corpus, spec_factory, tmp_path):
    import fasttext

    from mixture.pipelines.build import build

    model_path = tmp_path / "quality.bin"
    train_model(demo_corpus, model_path)
    spec = spec_factory(str(demo_corpus), "store")
    spec["partition"]["quality"].update({"scorer": "fasttext", "fasttext_model": str(model_path),
                                         "fasttext_label": "__label__hq"})
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    build(str(spec_path), progress=False)
    files = sorted((tmp_path / "store").glob("cluster=*/quality=*/*.parquet"))
    t = ds.dataset([str(f) for f in files], format="parquet").to_table(columns=["text", "raw_score", "source"])
    rows = t.slice(0, 40).to_pylist()
    model = fasttext.load_model(str(model_path))
    for r in rows:
        labels, probs = model.predict(r["text"][:20_000].replace("\n", " "), k=-1)
        expected = dict(zip(labels, probs, strict=True)).get("__label__hq", 0.0)
        assert r["raw_score"] == pytest.approx(float(expected), abs=1e-6)
    assert all(0.0 <= r <= 1.0 + 1e-4 for r in t.column("raw_score").to_pylist())
