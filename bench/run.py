"""Run every benchmark module (`bench/*_bench.py`) in name order: `python -m bench.run [name ...]`."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def modules() -> list[str]:
    return sorted(p.stem for p in Path(__file__).parent.glob("*_bench.py"))


def main(argv: list[str] | None = None) -> None:
    wanted = sys.argv[1:] if argv is None else argv
    for name in modules():
        if wanted and name not in wanted and name.removesuffix("_bench") not in wanted:
            continue
        print(f"== bench.{name}", flush=True)
        saved, sys.argv = sys.argv, [f"bench/{name}.py"]  # each main() parses its own (empty) command line
        try:
            importlib.import_module(f"bench.{name}").main()
        finally:
            sys.argv = saved


if __name__ == "__main__":
    main()
