"""String and binary columns spilled to a local file and read back a few rows at a time in any order: a task that must
reorder more text than it may hold keeps only each row's positions (sorted in DuckDB) and reads the values back."""

from __future__ import annotations

import os
from typing import BinaryIO

import numpy as np
import pyarrow as pa

INT32_MAX = 2**31 - 1


class SpilledColumns:
    """The `schema`'s string/binary columns of every table appended, in an open local file (`path`, removed with its
    folder by the caller). `append` returns each row's position and length per column (length -1: null), `read`
    takes such positions in any order and returns the rows' values as arrays of the schema's types."""

    def __init__(self, path: str, schema: pa.Schema):
        for field in schema:
            if not (pa.types.is_string(field.type) or pa.types.is_binary(field.type)):
                raise TypeError(f"SpilledColumns holds string and binary columns, not {field.name}: {field.type}")
        self.schema = schema
        self._file: BinaryIO = open(path, "w+b")  # noqa: SIM115 (closed by close(), the task's last use)
        self._end = 0

    @property
    def position_names(self) -> list[str]:
        """The names of `append`'s arrays, in order: `<column>_at`, `<column>_len` of each column."""
        return [f"{f.name}_{kind}" for f in self.schema for kind in ("at", "len")]

    def append(self, table: pa.Table | pa.RecordBatch) -> dict[str, np.ndarray]:
        """Write `table`'s columns of the schema, column after column; {`<column>_at`, `<column>_len`: int64 per row}."""
        out: dict[str, np.ndarray] = {}
        for field in self.schema:
            column = table.column(field.name)
            array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            array = array.cast(field.type)
            validity, offsets_buffer, data = array.buffers()
            offsets = np.frombuffer(offsets_buffer, np.int32)[array.offset:array.offset + len(array) + 1].astype(np.int64)
            lo, hi = int(offsets[0]), int(offsets[-1])
            if hi > lo:
                self._file.write(memoryview(data)[lo:hi])
            length = np.diff(offsets)
            if array.null_count:
                length[array.is_null().to_numpy(zero_copy_only=False)] = -1
            out[f"{field.name}_at"] = self._end + offsets[:-1] - lo
            out[f"{field.name}_len"] = length
            self._end += hi - lo
        return out

    def read(self, positions: dict[str, np.ndarray]) -> list[pa.Array]:
        """The rows at `positions` (as `append` gave them, any rows in any order), one array per column of the schema.
        Each column's values of these rows must fit one Arrow array (under 2 GiB): read large rows a few at a time."""
        self._file.flush()
        fd = self._file.fileno()
        arrays = []
        for field in self.schema:
            at, length = positions[f"{field.name}_at"], positions[f"{field.name}_len"]
            valid = length >= 0
            sizes = np.where(valid, length, 0)
            offsets = np.zeros(len(sizes) + 1, np.int64)
            np.cumsum(sizes, out=offsets[1:])
            if offsets[-1] > INT32_MAX:
                raise ValueError(f"SpilledColumns.read: {offsets[-1]:,} bytes of column {field.name} in one read "
                                 f"(at most {INT32_MAX:,}): read fewer rows at a time")
            data = b"".join(os.pread(fd, int(n), int(p)) for p, n in zip(at.tolist(), sizes.tolist(), strict=True) if n)
            mask = None if valid.all() else pa.array(valid).buffers()[1]
            arrays.append(pa.Array.from_buffers(field.type, len(sizes),
                                                [mask, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
                                                null_count=int((~valid).sum())))
        return arrays

    def close(self) -> None:
        self._file.close()
