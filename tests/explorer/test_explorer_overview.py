"""Overview page in AppTest: headline, cards, index search, domain panels, enrichment, query params, <script>."""

from __future__ import annotations

import re

import pytest

from mixture.spec.amounts import humanize
from tests.explorer.apptest_util import open_domains, run, unescape
from tests.explorer.synthstore import SCRIPT_DOC


def test_headline_and_cards_equal_store_json(app_env, artifact):
    at = run()
    k = len(artifact["clusters"])
    tokens = artifact["counters"]["tokens_out"]
    assert at.header[0].value == (f"{humanize(tokens)} tokens across {k} semantic domains "
                                  "and 5 calibrated quality buckets")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["documents"] == f"{artifact['counters']['records_out']:,}"
    assert metrics["tokens"] == humanize(tokens)
    assert metrics["sources"] == str(len(artifact["sources"]))
    assert metrics["cells"] == f"{len(artifact['cells'])} non-empty of {len(artifact['cells'])}"
    assert metrics["dropped: exact duplicate"] == str(artifact["counters"]["exact_duplicate_dropped"])
    assert metrics["dropped: bad input"] == str(artifact["counters"]["bad_input"])
    cutoffs = at.table[0].value
    assert list(cutoffs.loc["code"]) == artifact["raw_score_cutoffs"]["code"]


def _index(at) -> list[str]:
    return [unescape(b.label) for b in at.button if b.key and b.key.startswith("idx_")]


def test_index_entries_and_search_filters(app_env, artifact):
    at = run()
    entries = _index(at)
    assert len(entries) == len(artifact["clusters"])
    total = sum(c["tokens"] for c in artifact["clusters"])
    c2 = artifact["clusters"][2]
    assert f"2 · {c2['label']} · {100 * c2['tokens'] / total:.2f}% · {humanize(c2['tokens'])}" in entries
    at.text_input(key="q").input("lemma").run()       # a top term of domain 2 only
    assert [e.split(" · ")[0] for e in _index(at)] == ["2"]
    assert at.query_params["q"] in ("lemma", ["lemma"])
    at.text_input(key="q").input("alert(1)").run()    # only in the sampled text of domain 1
    assert [e.split(" · ")[0] for e in _index(at)] == ["1"]
    at.text_input(key="q").input("no-such-word").run()
    assert _index(at) == []


def test_index_click_opens_domain_and_sets_query_param(app_env):
    at = run()
    assert open_domains(at) == []
    next(b for b in at.button if b.key == "idx_3").click().run()
    assert at.query_params["domain"] in ("3", ["3"])
    assert [d.split(" · ")[0] for d in open_domains(at)] == ["3"]
    next(b for b in at.button if b.label == "Open all").click().run()
    assert len(open_domains(at)) == 5
    next(b for b in at.button if b.label == "Close all").click().run()
    assert open_domains(at) == []


def _panel(at, domain: int):
    return next(e for e in at.expander if unescape(e.label).startswith(f"{domain} · ") and len(e.metric))


@pytest.mark.parametrize("domain", [0, 3])
def test_panel_shares_sum_to_100_and_enrichment_is_the_formula(app_env, artifact, domain):
    at = run(domain=str(domain))
    panel = _panel(at, domain)
    shares = [float(m.value.rstrip("%")) for m in panel.metric]
    assert len(shares) == 5
    assert sum(shares) == pytest.approx(100.0, abs=0.03)
    cells = artifact["cells"]
    total = sum(c["tokens"] for c in cells)
    dom = sum(c["tokens"] for c in cells if c["cluster"] == domain)
    expected = []
    for q in range(5):
        cell = next(c for c in cells if c["cluster"] == domain and c["quality"] == q)
        bucket = sum(c["tokens"] for c in cells if c["quality"] == q)
        assert float(panel.metric[q].value.rstrip("%")) == pytest.approx(100 * cell["tokens"] / dom, abs=0.005)
        expected.append(f"×{(cell['tokens'] / dom) / (bucket / total):.2f}")
    shown = [re.search(r"×[0-9.]+", m.value).group(0) for m in panel.markdown if "enrichment" in m.value]
    assert shown == expected
    captions = [c.value for c in panel.caption]
    q0 = next(c for c in cells if c["cluster"] == domain and c["quality"] == 0)
    assert f"{humanize(q0['tokens'])} tokens · {q0['docs']:,} docs" in captions


def test_query_param_cell_selects_domain_and_plan_weights(app_env, plan_file):
    from mixture.planner.formats import read_plan

    plan = read_plan(str(plan_file))
    at = run(cell="c04q2")
    assert [d.split(" · ")[0] for d in open_domains(at)] == ["4"]
    panel = _panel(at, 4)
    w0 = plan.phases[0].weights["c04q2"]
    epochs = plan.cell_map()["c04q2"].exposure
    assert epochs > plan.settings.max_epochs
    assert any(f"phase0 {w0:.4g}" in unescape(c.value) and f"{epochs:.2f} epochs" in c.value
               and "over cap" in c.value for c in panel.caption)


def test_script_in_a_document_renders_as_text(app_env):
    at = run(cell="c01q2")
    codes = [c.value for c in at.code]
    assert SCRIPT_DOC in codes                       # shown verbatim, as text
    for el in list(at.markdown) + list(at.caption):  # never passed to Markdown/HTML
        assert "<script>" not in el.value
        assert not getattr(el.proto, "allow_html", False)
    assert len(at.get("html")) == 0


def test_long_documents_are_cut_with_show_all(app_env):
    at = run(cell="c00q4")
    long = [c for c in at.code if "long long" in c.value]
    assert long and all(len(c.value) <= 905 and "TAILMARKER" not in c.value for c in long)
    toggle = at.toggle(key="all_d0_q4_0")
    toggle.set_value(True).run()
    assert any(c.value.endswith("TAILMARKER") for c in at.code)


def test_examples_switch_to_exemplars(app_env, store):
    import pyarrow.parquet as pq

    ex = pq.read_table(store / "_samples/exemplars.parquet").to_pandas()
    first = ex[(ex.cluster == 2) & (ex.quality == 0)].sort_values("rank").text.iloc[0]
    at = run(domain="2")
    assert not any(c.value.startswith(first[:200]) for c in at.code[:2])
    at.segmented_control(key="examples_kind").set_value("nearest to centroid").run()
    assert at.code[0].value.startswith(first[:200])


@pytest.mark.parametrize("domain", [1, 3])
def test_panel_shows_the_domains_language_mix(app_env, artifact, domain):
    """The caption lists the domain's languages by share of its tokens, as store.json `language.by_cluster` counts."""
    rows = [r for r in artifact["language"]["by_cluster"] if r["cluster"] == domain]
    total = sum(r["tokens"] for r in rows)
    expected = " · ".join(f"{r['language']} {100 * r['tokens'] / total:.1f}%"
                          for r in sorted(rows, key=lambda r: (-r["tokens"], r["language"])))
    at = run(domain=str(domain))
    shown = [c.value for c in _panel(at, domain).caption if c.value.startswith("languages:")]
    assert shown == [f"languages: {expected}"]
    assert len(rows) == 2  # the domain's own language (de, zh) and English


def test_calibration_groups_are_listed_with_their_fallback(app_env, artifact):
    at = run()
    groups = next(d.value for d in at.dataframe if d.value.index.name == "group")
    assert list(groups.index) == [g["group"] for g in artifact["language"]["calibration_groups"]]
    assert list(groups["calibration"]) == ["own", "content type's (too few)"]
    assert list(groups.loc["prose/de"].iloc[2:]) == artifact["language"]["calibration_groups"][1]["raw_cutoffs"]
