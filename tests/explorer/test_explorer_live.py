"""Live build page on a finished store: no auto-refresh, stages in pipeline order."""

from __future__ import annotations

from mixture.stages import registry as stage_registry
from tests.explorer.apptest_util import run


def test_live_page_on_a_finished_store_does_not_refresh_and_lists_stages_in_order(monkeypatch, built_store):
    monkeypatch.setenv("MIXTURE_STORE", str(built_store.store))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    at = run("live")
    assert at.header[0].value == "Live build"
    assert "is complete" in at.success[0].value
    toggle = at.toggle(key="live_auto")
    assert toggle.value is False and toggle.proto.disabled
    assert at.caption[-1].value.startswith("refreshed ") and "every" not in at.caption[-1].value
    shown = [p.proto.text.split(":")[0].split("/")[0] for p in at.get("progress")]  # a round: `<stage>/<round>`
    order = stage_registry.names()
    assert len(shown) >= 3 and set(shown) <= set(order)
    assert shown == sorted(shown, key=order.index) and shown != sorted(shown)
