"""How the clusters share a store's tokens against `partition.clusters` min_share / max_share: the `store.json`
`cluster_balance` block and its warnings."""

from __future__ import annotations

from mixture.store.formats import ClusterBalance, ClusterEntry

ONE_LANGUAGE = 0.9  # a cluster is one language's when that language holds this share of its sample tokens


def language_split(clusters: list[ClusterEntry]) -> str | None:
    """A warning when the clusters split by language: at least half of them are each one language's (ONE_LANGUAGE)
    and those are of two languages or more. The lexical embedder puts a text and its translation apart, so cluster
    weights then weigh languages."""
    mono = [c for c in clusters if c.languages and c.languages[0] != "und" and (c.language_share or 0) >= ONE_LANGUAGE]
    languages = sorted({c.languages[0] for c in mono})
    if len(languages) < 2 or 2 * len(mono) < len(clusters):
        return None
    return (f"the clusters split by language: {len(mono)} of {len(clusters)} are each at least {ONE_LANGUAGE:.0%} one "
            f"language ({', '.join(languages)}), so a mixture's cluster weights are also language weights; to cluster "
            "by topic across languages use partition.clusters.embedder: sentence with a multilingual model, or "
            "weigh the languages on purpose (store.json clusters[].languages)")


def cluster_balance(clusters: list[ClusterEntry], min_share: float, max_share: float) -> ClusterBalance:
    """The largest and smallest cluster by tokens, with a warning for a cluster above `max_share` or below
    `min_share` of the tokens (the fit balanced an estimate on its sample; these are the cells' exact counts)."""
    tokens = sum(c.tokens for c in clusters)
    docs = sum(c.docs for c in clusters)
    share = {c.id: c.tokens / tokens if tokens else 0.0 for c in clusters}
    largest = max(clusters, key=lambda c: (c.tokens, -c.id))
    smallest = min(clusters, key=lambda c: (c.tokens, c.id))
    warnings = []
    for c in clusters:
        if share[c.id] > max_share:
            warnings.append(
                f"cluster {c.id} ({c.label}) holds {share[c.id]:.1%} of the tokens, above partition.clusters.max_share "
                f"({max_share:.1%}): the fit could not split it further (a few long documents, or documents it cannot "
                "tell apart, hold most of it) or its sample estimate missed; raise fine_k or sample_docs, or max_share")
        elif share[c.id] < min_share and tokens:
            warnings.append(
                f"cluster {c.id} ({c.label}) holds {share[c.id]:.2%} of the tokens, below partition.clusters.min_share "
                f"({min_share:.2%}): the fit's estimate on its sample was above it; raise sample_docs or lower k")
    if split := language_split(clusters):
        warnings.append(split)
    return ClusterBalance(
        min_share=min_share, max_share=max_share,
        largest_cluster=largest.id, largest_token_share=round(share[largest.id], 6),
        largest_doc_share=round(largest.docs / docs, 6) if docs else 0.0,
        smallest_cluster=smallest.id, smallest_token_share=round(share[smallest.id], 6),
        warnings=warnings,
    )
