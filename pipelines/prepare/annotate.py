"""Stage `prepare`: each document's content type (kind and code language), language and raw quality score."""

from __future__ import annotations

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.text.content_type import detect_content_type
from mixture.text.content_type_magika import MagikaLanguage
from mixture.text.language import LanguageIdentifier
from mixture.text.quality import raw_quality_score


class Annotate(PipelineStep):
    """Content type, language and raw quality score (heuristic signals, or a local fastText model)."""

    type = "🏷 - ANNOTATE"
    name = "content type + language + raw quality"

    def __init__(self, scorer: str = "heuristic", fasttext_model: str | None = None, fasttext_label: str = "__label__hq",
                 language_model: str = "cld2", language_min_score: float = 0.5):
        super().__init__()
        self.scorer, self.fasttext_model, self.fasttext_label = scorer, fasttext_model, fasttext_label
        self.language = LanguageIdentifier(language_model, language_min_score)
        self._ft = None
        self.magika = MagikaLanguage()  # judges a code-like text's language where the cheap scorer is unsure

    def score(self, text: str) -> float:
        if self.scorer != "fasttext":
            return raw_quality_score(text)
        if self._ft is None:
            import fasttext

            self._ft = fasttext.load_model(self.fasttext_model)
        labels, probs = self._ft.predict(text[:20_000].replace("\n", " "), k=-1)
        return float(dict(zip(labels, probs, strict=True)).get(self.fasttext_label, 0.0))

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            m = doc.metadata
            m["content_type"], m["code_language"] = detect_content_type(doc.text, self.magika)
            m["language"], m["language_score"] = self.language.identify(doc.text)
            m["raw_score"] = self.score(doc.text)
            yield doc
