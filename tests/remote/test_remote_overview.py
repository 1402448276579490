"""`mixture overview --out s3://…` (moto's S3 server): the page is an object a browser shows (text/html), written
through a temporary name. The gs:// case, from a gs:// store and plan, is in test_remote_gcs.py."""

from __future__ import annotations

import pytest

from tests.remote.conftest import Remote

pytestmark = pytest.mark.slow


def test_s3_overview_page_from_a_local_store(s3: Remote, built_store, tmp_path) -> None:
    from typer.testing import CliRunner

    from mixture.cli import app

    out = s3.url("site/overview")
    result = CliRunner().invoke(app, ["overview", str(built_store.store), "--out", out])
    assert result.exit_code == 0, result.output
    fs = s3.fs
    assert fs.info("bucket/site/overview/index.html")["ContentType"] == "text/html; charset=utf-8"  # HEAD
    assert fs.ls("bucket/site/overview") == ["bucket/site/overview/index.html"]
    page = fs.cat("bucket/site/overview/index.html").decode("utf-8")
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert f"wrote {out}/index.html ({len(page.encode()) / 1e6:.2f} MB" in result.output
