"""Language identification benchmark: accuracy against the labels of the Debian multilingual corpus (translated
man pages and fortunes) and documents per second there and on the demo corpus, for the build's identifier (CLD2)
and, given a model file, a local fastText model. Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.common import machine, show

BEGIN, END = "<!-- language-bench:begin -->", "<!-- language-bench:end -->"


def demo_texts(scale: float, root: Path) -> list[str]:
    from mixture.demo_corpus import read, write_demo_corpus

    out = root / "demo"
    write_demo_corpus(str(out), seed=0, scale=scale, progress=False)
    return read.texts(out)


def measure(identify, texts: list[str], repeats: int = 3) -> float:
    """Documents per CPU second of this process, best of `repeats` passes (CPU time, not wall time: the figure
    should not depend on what else a shared machine runs)."""
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        for text in texts:
            identify(text)
        best = min(best, time.process_time() - t)
    return len(texts) / best


def accuracy(identify, rows: list[dict]) -> dict:
    hits, seen, und = Counter(), Counter(), 0
    for r in rows:
        code = identify(r["text"])[0]
        seen[(r["kind"], r["lang"])] += 1
        hits[(r["kind"], r["lang"])] += code == r["lang"]
        und += code == "und"

    def share(kind: str | None) -> float:
        keys = [k for k in seen if kind is None or k[0] == kind]
        return sum(hits[k] for k in keys) / sum(seen[k] for k in keys)

    return {"all": share(None), "fortune": share("fortune"), "man": share("man"), "und": und,
            "per": {k: hits[k] / n for k, n in sorted(seen.items())}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scale", type=float, default=1.0, help="demo corpus scale")
    p.add_argument("--fasttext-model", help="also measure a local fastText LID model (lid.176.ftz / .bin)")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    args = p.parse_args()

    from mixture.demo_corpus.debian_text import missing_reason, read_labelled, write_multilingual_corpus
    from mixture.text.language import LanguageIdentifier

    if reason := missing_reason():
        raise SystemExit(reason)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_multilingual_corpus(root / "debian", seed=0, scale=1.0)
        labelled = [r for r in read_labelled(root / "debian") if r["kind"] in ("man", "fortune") and "#" not in r["id"]]
        demo = demo_texts(args.scale, root)
    models = {"cld2 (pycld2, the build's)": "cld2"}
    if args.fasttext_model:
        models[f"fastText {Path(args.fasttext_model).name}"] = f"fasttext:{args.fasttext_model}"
    rows = []
    for name, model in models.items():
        lid = LanguageIdentifier(model)
        lid.identify("warm up")
        acc = accuracy(lid.identify, labelled)
        rows.append((name, acc, measure(lid.identify, [r["text"] for r in labelled]), measure(lid.identify, demo)))
        print(name, {k: v for k, v in acc.items() if k != "per"}, flush=True)
    langs = sorted({k for _, acc, _, _ in rows for k in acc["per"]})
    lines = [
        BEGIN, "## Language identification (`bench/language_bench.py`)", "",
        f"Machine: {machine()}.", "",
        f"Reproduce: `python -m bench.language_bench` (needs Debian's man pages and fortunes, `.ci/run` installs "
        f"them; `--fasttext-model lid.176.ftz` adds a fastText model). Labelled corpus: "
        f"`write_multilingual_corpus(seed=0, scale=1.0)`, its {len(labelled):,} original documents (planted copies "
        f"left out), labelled with the language of the package that ships them. Demo corpus: "
        f"`write_demo_corpus(seed=0, scale={args.scale:g})`, {len(demo):,} documents. The identifier reads the "
        "first 2,000 characters; speed is documents per CPU second, the best of 3 passes on one core.", "",
        "| identifier | accuracy, all | fortunes | man pages | `und` | docs/CPU s (Debian corpus) | docs/CPU s (demo corpus) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {name} | {acc['all']:.1%} | {acc['fortune']:.1%} | {acc['man']:.1%} | {acc['und']} | "
              f"{ml:,.0f} | {dm:,.0f} |" for name, acc, ml, dm in rows]
    lines += ["", "Per source and language (share of documents whose identified language is the label):", "",
              "| identifier | " + " | ".join(f"{kind} {lang}" for kind, lang in langs) + " |",
              "|---|" + "---:|" * len(langs)]
    lines += [f"| {name} | " + " | ".join(f"{acc['per'].get(k, 0):.0%}" for k in langs) + " |"
              for name, acc, _, _ in rows]
    lines.append(END)
    text = "\n".join(lines) + "\n"
    show(text, BEGIN, END, not args.no_publish)


if __name__ == "__main__":
    main()
