"""A page path opened directly (`/store?doc=…`) is sent on to the app's root as `/?page=store&doc=…`: opened at
`/store`, Streamlit's frontend first looks for its server under the page path (`/store/_stcore/health`, a 404)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from mixture.explorer.gate import ASGIApp, Receive, Scope, Send

# main.py's url_path of every page but the default one (tests/explorer/test_explorer_units.py compares them)
PAGE_PATHS = ("store", "mixture", "diff", "search", "map", "live")


def root_target(path: str, query: str, prefix: str = "") -> str | None:
    """Where a request for a page path goes instead: the app's root with the page as `?page=` before the rest of
    the query, kept byte for byte (a `page` the query already names wins, as in main.py); None for any other
    path. `prefix`: the server's base URL path ('/mixture'), '' at the root."""
    prefix = prefix.rstrip("/")
    if not path.startswith(prefix + "/"):
        return None
    name = path[len(prefix) + 1:].rstrip("/")
    if name not in PAGE_PATHS:
        return None
    named = any(k == "page" for k, _ in parse_qsl(query, keep_blank_values=True))
    query = query if named else f"page={name}" + (f"&{query}" if query else "")
    return f"{prefix or '/'}?{query}"


class PagePaths:
    """Redirect a GET or HEAD of a page path to the app's root (`root_target`); pass everything else on."""

    def __init__(self, app: ASGIApp, prefix: str = "") -> None:
        self.app, self.prefix = app, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = None
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            target = root_target(scope.get("path", ""), scope.get("query_string", b"").decode("latin-1"),
                                 self.prefix)
        if target is None:
            await self.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 302,
                    "headers": [(b"location", target.encode("latin-1")), (b"cache-control", b"no-store"),
                                (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
