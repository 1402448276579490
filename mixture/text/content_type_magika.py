"""Google's Magika (its model ships in its wheel; nothing is downloaded) as the judge of a code-like text's
language where the cheap scorer is unsure: `MagikaLanguage()(text)` -> a language, or None for plain text."""

from __future__ import annotations

HEAD = 6000  # characters given to the model (it reads the start and the end of what it is given)
# Magika's labels for text that is not code (None: the document is prose or plain text after all)
TEXT_LABELS = {"txt", "markdown", "rst", "unknown", "empty", "po", "srt", "vtt", "eml", "mht", "rtf"}
RENAMED = {"jsonl": "json", "tex": "latex", "bib": "latex", "svg": "xml", "batch": "shell", "powershell": "shell"}


class MagikaLanguage:
    """Loads the model on first use (~0.2 s) and keeps it; counts how many texts it judged (`calls`)."""

    def __init__(self) -> None:
        self._model = None
        self.calls = 0

    def __call__(self, text: str) -> str | None:
        if self._model is None:
            from magika import Magika

            self._model = Magika()
        self.calls += 1
        label = str(self._model.identify_bytes(text[:HEAD].encode("utf-8", "replace")).output.label)
        return None if label in TEXT_LABELS else RENAMED.get(label, label)

    def __getstate__(self) -> dict:  # datatrove pickles the step to its tasks: the model is loaded there
        return {"_model": None, "calls": 0}
