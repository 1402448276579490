"""Overview page in AppTest: headline, cards, index search, domain panels, enrichment, query params, <script>."""

from __future__ import annotations

import base64
import re

import pytest

from mixture.composition import numbers
from tests.explorer.apptest_util import grid, open_domains, panel, plain, run
from tests.explorer.synthstore import SCRIPT_DOC


def test_headline_and_cards_equal_store_json(app_env, artifact):
    at = run()
    k = len(artifact["clusters"])
    tokens = artifact["counters"]["tokens_out"]
    assert at.header[0].value == (f"{numbers.tokens(tokens, 4)} tokens across {k} semantic domains "
                                  "and 5 calibrated quality buckets")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["documents"] == f"{artifact['counters']['records_out']:,}"
    assert metrics["tokens"] == numbers.tokens(tokens, 4)
    assert metrics["sources"] == str(len(artifact["sources"]))
    assert metrics["cells"] == f"{len(artifact['cells'])} non-empty of {len(artifact['cells'])}"
    assert metrics["domains"] == str(k) and metrics["buckets"] == "5"  # issue 16: the cards say both
    dropped = next(c.value for c in at.caption if c.value.startswith("dropped:"))
    assert f"exact duplicate **{artifact['counters']['exact_duplicate_dropped']}**" in plain(dropped)
    assert f"bad input **{artifact['counters']['bad_input']}**" in plain(dropped)
    cutoffs = at.table[0].value
    assert list(cutoffs.loc["code"]) == artifact["raw_score_cutoffs"]["code"]


def _index(at) -> list[str]:
    return [plain(b.label) for b in at.button if b.key and b.key.startswith("idx_")]


def test_index_entries_and_search_filters(app_env, artifact):
    at = run()
    entries = _index(at)
    assert len(entries) == len(artifact["clusters"])
    total = sum(c["tokens"] for c in artifact["clusters"])
    c2 = artifact["clusters"][2]
    assert c2["label"] == "Theorem, Proof, Lemma"  # as the fit writes it; shown as words, in lower case
    assert f"2 · theorem, proof, lemma · {100 * c2['tokens'] / total:.2f}% · {numbers.tokens(c2['tokens'])}" in entries
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


@pytest.mark.parametrize("domain", [0, 3])
def test_panel_shares_sum_to_100_and_enrichment_is_the_formula(app_env, artifact, domain):
    at = run(domain=str(domain))
    table = grid(panel(at, domain))
    assert table["buckets"] == ["Q0 junk", "Q1 poor", "Q2 usable", "Q3 good", "Q4 excellent"]
    shares = [float(v.strip("*%")) for v in table["share of domain"]]
    assert len(shares) == 5
    assert sum(shares) == pytest.approx(100.0, abs=0.03)
    cells = artifact["cells"]
    total = sum(c["tokens"] for c in cells)
    dom = sum(c["tokens"] for c in cells if c["cluster"] == domain)
    expected = []
    for q in range(5):
        cell = next(c for c in cells if c["cluster"] == domain and c["quality"] == q)
        bucket = sum(c["tokens"] for c in cells if c["quality"] == q)
        assert shares[q] == pytest.approx(100 * cell["tokens"] / dom, abs=0.005)
        expected.append(f"×{(cell['tokens'] / dom) / (bucket / total):.2f}")
        assert table["tokens"][q] == numbers.tokens(cell["tokens"]) and table["documents"][q] == f"{cell['docs']:,}"
    assert table["enrichment"] == expected


def test_query_param_cell_selects_domain_and_plan_weights(app_env, plan_file):
    from mixture.planner.formats import read_plan

    plan = read_plan(str(plan_file))
    at = run(cell="c04q2")
    assert [d.split(" · ")[0] for d in open_domains(at)] == ["4"]
    assert at.pills(key="bucket_4").value == 2  # the cell's bucket is picked: its sources and documents show
    table = grid(panel(at, 4))
    w0 = plan.phases[0].weights["c04q2"]
    epochs = plan.cell_map()["c04q2"].exposure
    assert epochs > plan.settings.max_epochs
    assert table["weight phase0"][2] == numbers.weight(w0)
    assert table["epochs"][2] == f":red[**{epochs:.2f} over cap**]"


def test_script_in_a_document_renders_as_text(app_env):
    at = run(cell="c01q2")
    codes = [c.value for c in at.code]
    assert SCRIPT_DOC in codes                       # shown verbatim, as text
    for el in list(at.markdown) + list(at.caption):  # never passed to Markdown/HTML
        assert "<script>" not in el.value
        assert not getattr(el.proto, "allow_html", False)
    for el in at.get("html"):  # only the explorer's own scroll script and style, never store text
        assert "alert(1)" not in el.proto.body and "<b>" not in el.proto.body


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
    at = run(cell="c02q0")
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
    head = panel(at, domain).markdown[0].value
    assert f"languages {expected}" in plain(head)
    assert len(rows) == 2  # the domain's own language (de, zh) and English


def test_calibration_groups_are_listed_with_their_fallback(app_env, artifact):
    at = run()
    groups = next(d.value for d in at.dataframe if d.value.index.name == "group")
    assert list(groups.index) == [g["group"] for g in artifact["language"]["calibration_groups"]]
    assert list(groups["calibration"]) == ["own", "content type's (too few)"]
    assert list(groups.loc["prose/de"].iloc[2:]) == artifact["language"]["calibration_groups"][1]["raw_cutoffs"]


def _heavy(at) -> dict[str, int]:
    """What makes a page slow to draw: code blocks, tables (dataframes), charts."""
    return {"code": len(at.code), "dataframe": len(at.dataframe), "chart": len(at.get("vega_lite_chart"))}


def test_panels_are_light_until_a_bucket_is_picked(app_env, artifact):
    """Issue 16: 'Open all' drew every domain's 5 × 2 example documents and 5 source tables (391 code blocks on
    the demo store, 14.6 s). A panel now draws one Markdown block (with the stacked bar and the grid) and a bucket
    picker; a bucket's sources and documents only once picked, in that panel only."""
    at = run()
    assert _heavy(at) == {"code": 0, "dataframe": 1, "chart": 0}  # closed: nothing (the calibration groups table)
    next(b for b in at.button if b.label == "Open all").click().run()
    k = len(artifact["clusters"])
    assert len(open_domains(at)) == k
    assert _heavy(at) == {"code": 0, "dataframe": 1, "chart": 0}
    for d in range(k):
        p = panel(at, d)
        assert len(p.markdown) == 1 and len(p.get("button_group")) == 1 and not p.code
    at.pills(key="bucket_3").set_value(1).run()
    assert [len(panel(at, d).code) for d in range(k)] == [0, 0, 0, 2, 0]  # the two examples of c03q1
    assert len(panel(at, 3).dataframe) == 1  # its source composition
    next(b for b in at.button if b.label == "Close all").click().run()
    assert open_domains(at) == [] and _heavy(at)["code"] == 0


def test_stacked_bar_is_one_image_of_the_five_shares(app_env, artifact):

    at = run(domain="1")
    text = panel(at, 1).markdown[0].value
    data = text.split("(data:image/svg+xml;base64,", 1)[1].split(")", 1)[0]
    svg = base64.b64decode(data).decode()
    cells = [c for c in artifact["cells"] if c["cluster"] == 1]
    dom = sum(c["tokens"] for c in cells)
    widths = [float(w) for w in re.findall(r'<rect x="[0-9.]+" width="([0-9.]+)"', svg)]
    assert len(widths) == 5  # one bar, a segment per bucket (not five bars)
    assert [w / sum(widths) for w in widths] == pytest.approx(
        [c["tokens"] / dom for c in sorted(cells, key=lambda c: c["quality"])], abs=0.002)


@pytest.mark.parametrize(("params", "message"), [
    ({"domain": "99"}, "`domain=99` names no domain of this store: its domains are 0–4 and its quality buckets Q0–Q4"),
    ({"domain": "abc"}, "`domain=abc` names no domain of this store"),
    ({"cell": "c99q3"}, "`cell=c99q3` names no cell of this store: its domains are 0–4"),
    ({"cell": "c01q7"}, "`cell=c01q7` names no cell of this store"),
    ({"cell": "nope"}, "`cell=nope` is not a cell name: expected cNNqQ, e.g. c00q4"),
])
def test_a_link_to_an_unknown_domain_or_cell_says_so(app_env, params, message):
    """Issue 16: `?domain=99` was ignored silently."""
    at = run(**params)
    assert len(at.warning) == 1 and at.warning[0].value.startswith(f"The link's {message}")
    assert open_domains(at) == []


def test_a_store_whose_clusters_split_by_language_is_said_so_first(monkeypatch, store, tmp_path):
    """The build's warning that cluster weights are language weights heads the page (the synthetic store's clusters
    made each one language's); the synthetic store itself has no such warning."""
    import json
    import shutil

    at = run_on(monkeypatch, store)
    assert not [w for w in at.warning if "split by language" in w.value]
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    doc = json.loads((copy / "store.json").read_text())
    for i, c in enumerate(doc["clusters"]):
        c["languages"], c["language_share"], c["name"] = [["de", "fr"][i % 2]], 0.95, f"Titel {i}"
    (copy / "store.json").write_text(json.dumps(doc))
    at = run_on(monkeypatch, copy)
    assert [w.value for w in at.warning if w.value.startswith("the clusters split by language")]


def run_on(monkeypatch, store):
    monkeypatch.setenv("MIXTURE_STORE", str(store))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    monkeypatch.delenv("MIXTURE_STORE_B", raising=False)
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    return run()
