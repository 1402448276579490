"""Sharing mode in AppTest: only the stores and plans the server was started with, by any input, query
parameter or page; the shared token asked before anything; store scans bounded by rows."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from mixture import accounting
from mixture.explorer import config
from mixture.explorer.sharing import LOCATION_PARAMS
from tests.explorer.apptest_util import run

PAGES = ("overview", "store", "mixture", "diff", "search", "map", "live")
# the only text boxes a visitor gets in sharing mode: none of them names a file
FREE_TEXT = {"Search labels, top terms and sample text", "Text (case-insensitive substring of the text, id or source)",
             "Document id"}


@pytest.fixture
def share_env(monkeypatch, store, store_b, plan_file):
    """The way `mixture explore STORE --store STORE_B --plan PLAN --share` starts the app."""
    monkeypatch.setenv("MIXTURE_SHARE", "1")
    monkeypatch.setenv("MIXTURE_STORE", str(store))
    monkeypatch.setenv("MIXTURE_ALLOW_STORES", str(store_b))
    monkeypatch.setenv("MIXTURE_PLAN", str(plan_file))
    for name in ("MIXTURE_STORE_B", "MIXTURE_ALLOW_PLANS", "MIXTURE_EXPLORER_TOKEN", "MIXTURE_SCAN_ROWS"):
        monkeypatch.delenv(name, raising=False)
    return store


def _domains(store: Path) -> int:
    return len(json.loads((store / "store.json").read_text())["clusters"])


def _no_path_input(at, stores: list[str], plans: list[str]) -> None:
    assert {t.label for t in at.text_input} <= FREE_TEXT
    for box in at.selectbox:
        assert set(box.options) <= {*stores, *plans, "(no plan)"}, box.label


def test_sharing_mode_offers_no_path_input_on_any_page(share_env, store, store_b, plan_file):
    stores, plans = [str(store), str(store_b)], [str(plan_file)]
    for page in PAGES:
        at = run(page)
        _no_path_input(at, stores, plans)
    assert [b.label for b in at.sidebar.selectbox] == ["Store", "Plan"]
    at = run("diff")
    at.selectbox(key="diff_b").select(str(store_b)).run()
    assert {m.label: m.value for m in at.metric}["cells added"] == str(_domains(store_b) * 5 - _domains(store) * 5)
    at.segmented_control(key="diff_mode").set_value("two plans").run()
    _no_path_input(at, stores, plans)
    assert "Choose two of the shared plans" in at.info[0].value
    at = run("mixture")
    at.sidebar.selectbox(key="shared_plan").select("(no plan)").run()
    at.run()  # the URL now says ?plan=(no plan): still no error
    assert not at.error and "No plan loaded" in at.info[0].value
    assert at.query_params["plan"] in ("(no plan)", ["(no plan)"])


def test_sharing_mode_refuses_a_query_parameter_naming_another_location(share_env, store_b, building_store,
                                                                        tmp_path):
    outside = {"store": str(building_store), "plan": "/etc/passwd"}
    names = list(LOCATION_PARAMS)
    # the check runs before any page: every parameter on one page, and every page with one of them
    for page, name in [("search", n) for n in names] + [(p, names[i % len(names)]) for i, p in enumerate(PAGES)]:
        kind = LOCATION_PARAMS[name]
        at = run(page, **{name: outside[kind]})
        assert len(at.error) == 1 and at.error[0].value.startswith(f"Refused: `{name}=")
        assert not at.header and not at.metric and not at.sidebar.children  # nothing of the page ran
    at = run("overview", store=str(store_b))  # a shared store may be named
    assert f"across {_domains(store_b)} semantic domains" in at.header[0].value
    assert at.sidebar.selectbox[0].value == str(store_b)


def test_sharing_mode_ignores_a_store_put_in_the_session(share_env, monkeypatch, store, building_store):
    monkeypatch.delenv("MIXTURE_ALLOW_STORES")  # one store, no plan: no select box, the session value is all
    monkeypatch.delenv("MIXTURE_PLAN")
    for page in ("overview", "mixture"):
        at = run(page)
        at.session_state["shared_store"] = str(building_store)
        at.session_state["store_uri"] = str(building_store)
        at.session_state["shared_plan"] = at.session_state["plan_path"] = str(store.parent / "plan.json")
        at.run()
        assert not at.error and not at.sidebar.selectbox
    assert "No plan loaded" in at.info[0].value
    at = run("overview")
    at.session_state["shared_store"] = str(building_store)
    at.run()
    assert f"across {_domains(store)} semantic domains" in at.header[0].value


def test_local_use_keeps_free_inputs_and_an_open_address_shares(monkeypatch, store):
    monkeypatch.setenv("MIXTURE_STORE", str(store))
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    at = run("diff")
    assert {t.label for t in at.text_input} >= {"Store", "Plan", "Store A", "Store B"}
    monkeypatch.delenv("MIXTURE_SHARE")  # AppTest sets no server address: like a server on every interface
    assert not any(t.label == "Store" for t in run("overview").text_input)
    assert [h for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost") if not config.is_loopback(h)] == []
    assert [h for h in (None, "", "0.0.0.0", "::", "10.0.0.2", "example.org") if config.is_loopback(h)] == []


def test_without_the_token_only_its_prompt_shows(share_env, monkeypatch, store_b):
    monkeypatch.setenv("MIXTURE_EXPLORER_TOKEN", "s3cret-token")
    for page in PAGES:
        at = run(page, store=str(store_b))
        assert [h.value for h in at.header] == ["mixture explorer"]
        assert [t.label for t in at.text_input] == ["Access token"]
        assert not at.sidebar.children and not at.metric and not at.error and not at.markdown
    at.text_input[0].input("wrong").run()
    assert [e.value for e in at.error] == ["Wrong token."] and [h.value for h in at.header] == ["mixture explorer"]
    at.text_input[0].input("s3cret-token").run()
    assert at.header[0].value == "Live build" and not any(t.label == "Access token" for t in at.text_input)


def test_scan_stops_at_the_row_limit_and_says_so(share_env, monkeypatch):
    monkeypatch.setenv("MIXTURE_SCAN_ROWS", "10")
    at = run("search")
    next(b for b in at.button if b.label == "Scan the whole store").click().run()
    assert len(at.dataframe(key="search_hits").value) == 10  # every row matches an empty search
    assert at.warning[0].value.startswith("The scan stopped after 10 rows")
    assert "10 documents in the store (scan) match" in at.caption[0].value


def test_one_scan_at_a_time_per_session(share_env):
    at = run("search")
    busy = threading.Lock()
    busy.acquire()
    at.session_state["_scan_lock"] = busy
    next(b for b in at.button if b.label == "Scan the whole store").click().run()
    assert at.warning[0].value.startswith("A scan of this session is still running")


def test_scan_budget_on_the_built_store(built_store):
    reader = accounting.StoreReader(str(built_store.store))
    whole = accounting.scan_documents(reader, limit=10**9)
    assert whole.stopped == "complete" and len(whole.hits) > 10
    cut = accounting.scan_documents(reader, limit=10**9, budget=accounting.ScanBudget(max_rows=10))
    assert (cut.stopped, cut.rows_read, list(cut.hits.id)) == ("rows", 10, list(whole.hits.id[:10]))
    late = accounting.scan_documents(reader, budget=accounting.ScanBudget(max_seconds=0))
    assert (late.stopped, len(late.hits), late.files_read) == ("seconds", 0, 0)
    found = accounting.scan_documents(reader, doc_id=whole.hits.id.iloc[3], limit=1,
                                      budget=accounting.ScanBudget(max_rows=len(whole.hits)))
    assert found.stopped == "hits" and list(found.hits.id) == [whole.hits.id.iloc[3]]


def test_explore_command_sharing_options(tmp_path, store, store_b, plan_file):
    from typer.testing import CliRunner

    from mixture.cli import app as cli_app
    from mixture.explore_cli import read_share_list, streamlit_command

    cmd = streamlit_command(str(store), plan_file, 8599, "0.0.0.0", True, [str(store), str(store_b)],
                            [plan_file], scan_rows=10, scan_seconds=5)
    script = cmd[cmd.index("--") + 1:]
    assert script == ["--store", str(store), "--store", str(store_b), "--plan", str(plan_file), "--share",
                      "--scan-rows", "10", "--scan-seconds", "5"]
    assert cmd[cmd.index("--client.toolbarMode") + 1] == "viewer"
    assert "--no-share" in streamlit_command(str(store), None, 8599, "127.0.0.1")
    listed = tmp_path / "share.yaml"
    listed.write_text(f"stores: [{store_b}, gs://bucket/store]\nplans: [plan.json]\n")
    assert read_share_list(listed).model_dump() == {"stores": [str(store_b), "gs://bucket/store"],
                                                    "plans": [str(tmp_path / "plan.json")]}
    runner = CliRunner()
    listed.write_text("stores: [nowhere]\n")
    result = runner.invoke(cli_app, ["explore", str(store), "--allowlist", str(listed)])
    assert result.exit_code == 2 and "does not exist" in result.output
    listed.write_text("store: [x]\n")
    result = runner.invoke(cli_app, ["explore", str(store), "--allowlist", str(listed)])
    assert result.exit_code == 2 and "store" in result.output and "`stores:` and `plans:`" in result.output


def test_a_token_means_sharing_and_the_start_up_line_says_which_mode(store, monkeypatch):
    from typer.testing import CliRunner

    from mixture.cli import app as cli_app
    from mixture.explore_cli import mode_line, streamlit_command
    from mixture.explorer import SERVE, config

    monkeypatch.setenv(config.TOKEN_ENV, "a-token")
    result = CliRunner().invoke(cli_app, ["explore", str(store), "--no-share"])
    assert result.exit_code == 2 and "--no-share" in result.output and config.TOKEN_ENV in result.output
    monkeypatch.setenv(config.SHARE_ENV, "0")
    assert config.sharing()  # a token set without sharing mode turns it on (127.0.0.2 with a token: shared)
    assert streamlit_command(str(store), None, 8599, "127.0.0.2", True)[4] == str(SERVE)
    local = mode_line(False, False, None, "127.0.0.1", 1, 0, 10, 5)
    assert local.startswith("local mode (127.0.0.1 is a loopback address): free store and plan path boxes")
    shared = mode_line(True, True, None, "127.0.0.2", 2, 1, 10, 5)
    assert shared.startswith("sharing mode (a token is set): 2 store(s) and 1 plan(s) offered")
    assert "every page and endpoint but the health check asks for the token" in shared
    assert "no token: anyone who reaches the port" in mode_line(True, False, True, "0.0.0.0", 1, 0, 10, 5)


@pytest.mark.parametrize(("args", "token", "line", "mode"), [
    (["--host", "127.0.0.2"], "a-token", "sharing mode (a token is set): 1 store(s)", "--share"),
    (["--host", "127.0.0.2"], "", "local mode (127.0.0.2 is a loopback address): free store", "--no-share"),
    (["--host", "127.0.0.2", "--share"], "", "sharing mode (--share): 1 store(s)", "--share"),
    (["--host", "0.0.0.0"], "", "sharing mode (0.0.0.0 is not loopback)", "--share"),
    (["--host", "127.0.0.2", "--token", "a-token"], "", "sharing mode (a token is set)", "--share")])
def test_the_start_up_line_names_the_mode_the_server_runs(store, monkeypatch, args, token, line, mode):
    """What `mixture explore` prints is what it starts: a token on another loopback address shares, behind the token."""
    from typer.testing import CliRunner

    from mixture import explore_cli
    from mixture.cli import app as cli_app
    from mixture.explorer import config

    started = {}
    monkeypatch.setattr(explore_cli, "run_server", lambda cmd, env: started.update(cmd=cmd, env=env) or 0)
    if token:
        monkeypatch.setenv(config.TOKEN_ENV, token)
    else:
        monkeypatch.delenv(config.TOKEN_ENV, raising=False)
    result = CliRunner().invoke(cli_app, ["explore", str(store), *args])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].startswith(line), result.output
    assert mode in started["cmd"][started["cmd"].index("--"):]
    assert (started["env"].get(config.TOKEN_ENV) == "a-token") == ("token" in line)
    assert "a-token" not in started["cmd"]  # the token travels in the environment, never on the command line
