"""Render the overview page (Jinja2, every value escaped; the CSS and JS inlined) and write it atomically as
`DIR/index.html` at any fsspec location, with an HTML content type on object stores."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

import fsspec
import jinja2
from markupsafe import Markup

from mixture.accounting import StoreReader
from mixture.composition import numbers
from mixture.composition.figures import SEARCH_FIELDS
from mixture.overview.page import TEXT_BUDGET, Page, build_page
from mixture.planner.formats import Plan
from mixture.store.io import write_atomic

INDEX = "index.html"
CONTENT_TYPE = "text/html; charset=utf-8"
# how each object store is told the file is a web page (a bucket serves it to browsers with this type)
_CONTENT_TYPE_KWARGS = {"gs": {"content_type": CONTENT_TYPE}, "gcs": {"content_type": CONTENT_TYPE},
                        "s3": {"ContentType": CONTENT_TYPE}, "s3a": {"ContentType": CONTENT_TYPE}}
TEXT_TYPE = "text/plain; charset=utf-8"
_TEXT_TYPE_KWARGS = {"gs": {"content_type": TEXT_TYPE}, "gcs": {"content_type": TEXT_TYPE},
                     "s3": {"ContentType": TEXT_TYPE}, "s3a": {"ContentType": TEXT_TYPE}}


def _asset(name: str) -> str:
    return resources.files("mixture.overview").joinpath(name).read_text(encoding="utf-8")


@cache
def environment() -> jinja2.Environment:
    """The page's Jinja2 environment: autoescaping on, undefined names an error, the `numbers` filters."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("mixture.overview", "."), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters.update({name: getattr(numbers, name) for name in numbers.__all__})
    return env


def script_hash(js: str) -> str:
    """The Content-Security-Policy source of the page's one script: no other script can run in the page."""
    return "sha256-" + base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")


def render(page: Page) -> str:
    """The page as one HTML document (no reference to any other file or host, but its text files when it has
    some: `Page.texts`)."""
    js = _asset("overview.js")
    return environment().get_template("overview.html.j2").render(
        page=page, search_fields=SEARCH_FIELDS, css=Markup(_asset("overview.css")),
        js=Markup(js), script_hash=script_hash(js))


@dataclass(frozen=True)
class Written:
    url: str  # where the page is, as given (DIR/index.html)
    bytes: int
    texts: int = 0  # text files written beside it (`--full-texts`)


def write_page(html: str, out: str, texts: dict[str, str] | None = None) -> Written:
    """Write `html` to `out`/index.html (a local folder or any fsspec URL) through a temporary name, after the
    text files it fetches (`texts`: path under `out` -> text), each written the same way."""
    fs, root = fsspec.core.url_to_fs(out)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    for rel, text in sorted((texts or {}).items()):
        write_atomic(fs, f"{root.rstrip('/')}/{rel}", text.encode("utf-8"), **_TEXT_TYPE_KWARGS.get(protocol, {}))
    data = html.encode("utf-8")
    write_atomic(fs, f"{root.rstrip('/')}/{INDEX}", data, **_CONTENT_TYPE_KWARGS.get(protocol, {}))
    return Written(f"{out.rstrip('/')}/{INDEX}", len(data), len(texts or {}))


def write_overview(store: str | StoreReader, out: str, plan: Plan | None = None, plan_source: str = "",
                   samples_per_cell: int | None = None, text_budget: int = TEXT_BUDGET,
                   full_texts: bool = False) -> Written:
    """Read a complete store (and a plan) and write its overview page to `out`/index.html (with `full_texts`,
    the long samples' whole texts beside it, in `out`/texts/)."""
    reader = store if isinstance(store, StoreReader) else StoreReader(store)
    page = build_page(reader, plan, plan_source, samples_per_cell=samples_per_cell, text_budget=text_budget,
                      full_texts=full_texts)
    return write_page(render(page), out, page.texts)
