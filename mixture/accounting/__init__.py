"""The accounting layer: the one place that queries a store (DuckDB over Parquet footers, ledgers, artifacts)."""

from mixture.accounting.reader import StoreNotReady, StoreReader, open_fs

__all__ = ["StoreNotReady", "StoreReader", "open_fs"]
