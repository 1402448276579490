"""What a build will load, loaded before it starts (`mixture validate`, and `mixture build` first): the tokenizer,
a fastText model, a sentence model and the store's location, so a build cannot fail late for a reason known up
front. Each check returns (field path, what is wrong) pairs."""

from __future__ import annotations

import importlib.util
import os
import uuid

from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from mixture.regular_files import irregular
from mixture.spec.resolve import References
from mixture.store import layout


def tokenizer_problems(refs: References) -> list[tuple[str, str]]:
    """The tokenizer, loaded as the build will load it (offline)."""
    from mixture.tokenizer import TokenizerUnavailable, check_tokenizer

    try:
        check_tokenizer(refs.tokenizer)
    except TokenizerUnavailable as exc:
        return [("tokenizer", str(exc))]
    return []


def model_problems(refs: References) -> list[tuple[str, str]]:
    """The fastText models (quality scorer, language identifier: loaded) and the sentence model (a
    sentence-transformers folder, and the package)."""
    problems = []
    q, c = refs.spec.partition.quality, refs.spec.partition.clusters
    for key, path in (("partition.quality.fasttext_model", refs.quality_model),
                      ("partition.clusters.sentence_model", refs.sentence_model)):
        if path and not os.path.exists(path):
            problems.append((key, f"not found at {path!r}"))
        elif path and (why := irregular(path)):
            problems.append((key, why))
    odd_language_model = refs.language_model is not None and irregular(refs.language_model)
    if odd_language_model:
        problems.append(("processing.language.model", odd_language_model))
    if q.scorer == "fasttext" and (path := refs.quality_model) and os.path.exists(path) and not irregular(path):
        try:
            import fasttext

            fasttext.load_model(path)
        except ModuleNotFoundError:
            problems.append(("partition.quality.scorer", "scorer: fasttext needs the fasttext package: "
                                                         "pip install fasttext-numpy2-wheel"))
        except Exception as exc:  # noqa: BLE001 - fastText raises ValueError for a file it cannot read
            problems.append(("partition.quality.fasttext_model",
                             f"cannot load the fastText model {path!r}: {type(exc).__name__}: {exc}"))
    if refs.language_model is not None and not odd_language_model:  # a local language-identification model
        try:
            from mixture.text.language import LanguageIdentifier

            LanguageIdentifier(refs.language_id).identify("a first sentence")
        except Exception as exc:  # noqa: BLE001 - a missing file, or a file fastText cannot read (ValueError)
            problems.append(("processing.language.model", f"cannot load the fastText language model "
                                                          f"{refs.language_model!r}: {type(exc).__name__}: {exc}"))
    if c.embedder == "sentence" and (path := refs.sentence_model) and os.path.exists(path):
        if not os.path.isdir(path) or not any(os.path.exists(os.path.join(path, f)) for f in ("modules.json", "config.json")):
            problems.append(("partition.clusters.sentence_model",
                             f"{path!r} is not a sentence-transformers model folder (no modules.json or config.json)"))
        if importlib.util.find_spec("sentence_transformers") is None:
            problems.append(("partition.clusters.embedder", "embedder: sentence needs the sentence-transformers "
                                                            "package: pip install sentence-transformers"))
    return problems


def store_problems(uri: str) -> list[tuple[str, str]]:
    """The store's location can be written: on a local disk, its nearest existing folder is writable; elsewhere a
    small object is written under `_build/` and removed (credentials, bucket, write permission)."""
    try:
        fs, path = url_to_fs(uri)
    except Exception as exc:  # noqa: BLE001 - unknown protocol, missing package of a filesystem
        return [("store.uri", f"cannot open {uri!r}: {type(exc).__name__}: {exc}")]
    if isinstance(fs, LocalFileSystem):
        existing = os.path.abspath(path)
        while not os.path.exists(existing) and os.path.dirname(existing) != existing:
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            return [("store.uri", f"cannot write the store at {uri!r}: {existing!r} is a file, not a folder")]
        if not os.access(existing, os.W_OK | os.X_OK):
            return [("store.uri", f"cannot write the store at {uri!r}: {existing!r} is not writable")]
        return []
    probe = f"{path.rstrip('/')}/{layout.BUILD_DIR}/.write-check-{uuid.uuid4().hex}"
    try:
        fs.pipe_file(probe, b"")
        fs.rm_file(probe)
    except Exception as exc:  # noqa: BLE001 - credentials, a missing bucket, no write permission, unreachable
        return [("store.uri", f"cannot write the store at {uri!r}: {type(exc).__name__}: {exc}")]
    return []
