"""Google's Magika (its model ships in its wheel; nothing is downloaded) as the judge of a code-like text's
language where the cheap scorer is unsure: `MagikaLanguage()(text)` -> a language, or None for plain text."""

from __future__ import annotations

from functools import cache

HEAD = 6000  # characters given to the model (it reads the start and the end of what it is given)
# Magika's labels for text that is not code (None: the document is prose or plain text after all)
TEXT_LABELS = {"txt", "markdown", "rst", "unknown", "empty", "po", "srt", "vtt", "eml", "mht", "rtf"}
RENAMED = {"jsonl": "json", "tex": "latex", "bib": "latex", "svg": "xml", "batch": "shell", "powershell": "shell"}


@cache
def _load():
    """Magika with its ONNX session on one thread: a build runs a task per core, and the default session's thread
    pool would take every core for each call (Magika takes no session options, so the session is replaced). Loaded
    once per process: the tasks a worker runs one after another share it."""
    import onnxruntime as rt
    from magika import Magika

    model = Magika()
    options = rt.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    model._onnx_session = rt.InferenceSession(model._model_path, options, providers=["CPUExecutionProvider"])
    return model


class MagikaLanguage:
    """Loads the model on first use (~0.2 s, once per process) and keeps it; counts how many texts it judged
    (`calls`)."""

    def __init__(self) -> None:
        self._model = None
        self.calls = 0

    def __call__(self, text: str) -> str | None:
        if self._model is None:
            self._model = _load()
        self.calls += 1
        label = str(self._model.identify_bytes(text[:HEAD].encode("utf-8", "replace")).output.label)
        return None if label in TEXT_LABELS else RENAMED.get(label, label)

    def __getstate__(self) -> dict:  # datatrove pickles the step to its tasks: the model is loaded there
        return {"_model": None, "calls": 0}
