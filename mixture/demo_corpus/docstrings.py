"""Extract module, class and function docstrings from Python source with `ast`."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .textutil import parse_python


@dataclass(frozen=True)
class Docstring:
    module: str  # dotted module name
    qualname: str  # "" for the module itself, else Class.method
    kind: str  # module, class, function
    text: str  # cleaned by ast.get_docstring

    @property
    def name(self) -> str:
        return f"{self.module}.{self.qualname}" if self.qualname else self.module


def module_name(rel_path: str) -> str:
    """`json/decoder.py` -> `json.decoder`; `json/__init__.py` -> `json`."""
    name = rel_path[:-3] if rel_path.endswith(".py") else rel_path
    name = name.replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def extract(source: str, module: str) -> list[Docstring]:
    """Docstrings in source order; [] when the source does not parse."""
    tree = parse_python(source)
    if tree is None:
        return []
    out: list[Docstring] = []
    doc = ast.get_docstring(tree)
    if doc and doc.strip():
        out.append(Docstring(module, "", "module", doc.strip()))

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                qual = f"{prefix}{node.name}"
                d = ast.get_docstring(node)
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                if d and d.strip():
                    out.append(Docstring(module, qual, kind, d.strip()))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, qual + ".")

    visit(tree.body, "")
    return out


def module_document(docs: list[Docstring]) -> str:
    """All docstrings of one module as one document: a heading line per object, then its docstring."""
    parts = []
    for d in docs:
        heading = d.name if d.kind == "module" else f"{d.name} ({d.kind})"
        parts.append(f"{heading}\n\n{d.text}")
    return "\n\n".join(parts)
