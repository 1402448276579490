"""Files a spec names that are read whole (a tokenizer, a model, a benchmark): a FIFO, socket or device would block
the read, so it is refused up front with its path, as a source's irregular files are."""

from __future__ import annotations

import os
import stat


def irregular(path: str) -> str | None:
    """Why the local `path` is no file to read (a FIFO, socket, device, or a symlink that loops), or None: a regular
    file, a folder, a path that does not exist (the caller's own check names that) or a URL."""
    if "://" in path:
        return None  # an object store holds files only
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a symlink that loops
        return f"{path} cannot be opened ({exc.strerror or exc}); give the path of a regular file"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return (f"{path} is not a regular file (a FIFO, socket or device): reading it could block; give the path of a "
            "regular file")
