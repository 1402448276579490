"""The store contract: paths, cell names, ledgers and the store artifact (see docs/store.md)."""
