"""`mixture overview STORE --out DIR [--plan plan.json]`: write the store's static overview page."""

from __future__ import annotations

import time

import typer

from mixture.overview.page import TEXT_BUDGET


def register(app: typer.Typer) -> None:
    @app.command("overview")
    def overview(
        store: str = typer.Argument(..., help="Store folder or fsspec URI (gs://bucket/store, s3://…)."),
        out: str = typer.Option(..., "--out", "-o", help="Folder or fsspec URI to write index.html into "
                                                          "(gs://bucket/site/: a page anyone with read access "
                                                          "opens in a browser)."),
        plan: str | None = typer.Option(None, "--plan", help="plan.json (local or fsspec URI): each cell's "
                                                             "weight per phase and its epochs."),
        samples: int | None = typer.Option(None, "--samples", min=0, help="At most this many uniform samples "
                                                                          "per cell (default: all the store has)."),
        text_budget: int = typer.Option(TEXT_BUDGET, "--text-budget", min=0,
                                        help="Bytes of text (escaped) in the page: the search index (each "
                                             "sampled document's first 2,000 characters, their distinct words), "
                                             "then the samples' texts: each shows ~900 characters and 'show all' "
                                             "up to its share (at most 20,000 characters)."),
        full_texts: bool = typer.Option(False, "--full-texts", help="Write each long sample's whole text as a file "
                                        "beside index.html (DIR/texts/), which 'show all' fetches from the same "
                                        "place when the page is served over http(s) (a bucket, a web server); "
                                        "opened from disk (file://) a browser lets the page read no file, so "
                                        "'show all' opens the text on its own."),
    ) -> None:
        """Write a self-contained static page mirroring the published cluster overview: headline, summary
        cards, quality cutoffs per content type, a searchable domain index and one panel per domain (quality
        buckets with tokens, documents, enrichment, sources and uniform samples; with --plan weights and
        epochs). It needs no server and makes no request: open DIR/index.html from disk or a bucket;
        #domain-NN and #cNNqQ open one domain or cell.

        Example: mixture overview gs://bucket/store --out gs://bucket/site --plan plan.json
        """
        from mixture.accounting import StoreNotReady
        from mixture.accounting.cli import open_store
        from mixture.overview.page import DamagedStore
        from mixture.overview.render import write_overview
        from mixture.planner.formats import read_plan
        from mixture.store.formats import FormatError

        started = time.perf_counter()
        reader = open_store(store)
        try:
            loaded = read_plan(plan) if plan else None
        except FormatError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        try:
            written = write_overview(reader, out, loaded, plan or "", samples_per_cell=samples,
                                     text_budget=text_budget, full_texts=full_texts)
        except StoreNotReady:
            typer.echo(f"error: {store} has no store.json yet: it is still building (or its build failed). "
                       "Write the overview once `mixture build` has finished.", err=True)
            raise typer.Exit(1) from None
        except (FormatError, DamagedStore) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        except OSError as exc:  # a read-only folder, a full disk, a bucket that refuses the write; or a store read
            where = str(exc.filename or out)
            if where.startswith(out.rstrip("/")):
                typer.echo(f"error: cannot write the overview to {out}: {exc.strerror or exc} ({where}). Give --out a "
                           "folder or bucket you can write to.", err=True)
            else:
                typer.echo(f"error: cannot read {where}: {exc.strerror or exc}. Check the store with "
                           f"`mixture audit {store}`.", err=True)
            raise typer.Exit(1) from None
        texts = f", {written.texts:,} text files beside it" if full_texts else ""
        typer.echo(f"wrote {written.url} ({written.bytes / 1e6:.2f} MB{texts} in "
                   f"{time.perf_counter() - started:.1f} s)")
