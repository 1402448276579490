"""mixture: declarative pretraining-corpus mixtures you can build, audit and browse."""

import os

__version__ = "0.2.0"  # 0.2.0: content type as kind + code language; language `und` without best effort

# Allocator choices that must be made before numpy and pyarrow are first imported (both read them then):
# - Arrow's C++ default allocator: the system one, as pipelines/runtime/memory.py sets for pyarrow's own calls.
#   Left to mimalloc, the code that takes the C++ default (Acero's group_by in `fit`, dataset scans) paid for its
#   purges in system time.
# - numpy asks for transparent huge pages on arrays of 4 MiB and more; a build allocates and frees such arrays
#   batch after batch, and each first touch then zeroes (and, under THP defrag=madvise, compacts) 2 MiB.
ALLOCATOR_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "system", "NUMPY_MADVISE_HUGEPAGE": "0"}
for _name, _value in ALLOCATOR_ENV.items():
    os.environ.setdefault(_name, _value)
del _name, _value
