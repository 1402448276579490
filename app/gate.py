"""The shared secret at the door of a sharing explorer: an ASGI middleware in front of every endpoint but the health
check. A visitor without the session cookie gets a small form asking for the token, then the page they asked for."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from html import escape
from typing import Any
from urllib.parse import parse_qs, quote

COOKIE = "mixture_explorer_session"
TOKEN_PATH = "/_mixture/token"  # where the form posts the token
OPEN_PATHS = ("/_stcore/health", "/_stcore/script-health-check")  # what answers without the token
OFF_WHEN_SHARED = ("/_stcore/metrics",)  # no page needs it: off when sharing without a token (behind it with one)
MAX_FORM_BYTES = 8_192

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_FORM = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; form-action 'self'">
<title>mixture explorer</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:26rem;margin:12vh auto;padding:0 1rem;color:#31333f}}
input{{font:inherit;width:100%;box-sizing:border-box;padding:.4rem .6rem;margin:.3rem 0 .8rem}}
button{{font:inherit;padding:.35rem 1rem}} .error{{color:#b42318}}
@media (prefers-color-scheme: dark){{body{{background:#0e1117;color:#fafafa}}}}</style></head>
<body><h1>mixture explorer</h1>
<form method="post" action="{action}">
<label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" autofocus required>
<input type="hidden" name="next" value="{next}">
<button type="submit">Open</button>
<p>Ask whoever shared this explorer for its token.</p>{error}
</form></body></html>"""


def session_value(secret: str) -> str:
    """The session cookie's value: a keyed hash of the secret (the cookie never holds the secret itself)."""
    return hmac.new(secret.encode("utf-8"), b"mixture explorer session", hashlib.sha256).hexdigest()


def valid_cookie(cookie_header: str, secret: str) -> bool:
    """True when the Cookie header carries this secret's session cookie."""
    want = session_value(secret)
    for part in cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and hmac.compare_digest(value.encode(), want.encode()):
            return True
    return False


def safe_next(target: str) -> str:
    """Where to go once the token is given: a path of this server ('/store?doc=…'), never another host."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == name), "")


class TokenGate:
    """Pass a request on when it carries the session cookie or asks for an open path; else answer the form (a
    page), 401 (anything else) or close the websocket. The form's POST checks the token and sets the cookie for
    the browser session (no expiry), then sends the visitor to the page they asked for."""

    def __init__(self, app: ASGIApp, secret: str, prefix: str = "") -> None:
        self.app, self.secret, self.prefix = app, secret, prefix.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if (path.endswith(OPEN_PATHS) and scope["type"] == "http") or \
                valid_cookie(_header(scope, b"cookie"), self.secret):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if path == self.prefix + TOKEN_PATH and scope.get("method") == "POST":
            await self._check(receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        wanted = path + (f"?{query}" if query else "")
        internal = tuple(f"{self.prefix}/{p}/" for p in ("_stcore", "static", "media", "component", "app"))
        if scope.get("method") in ("GET", "HEAD") and not path.startswith(internal):  # a page: the form
            await self._form(send, wanted, 401)
        else:
            await _respond(send, 401, b"the explorer asks for its token first\n", "text/plain; charset=utf-8")

    async def _form(self, send: Send, wanted: str, status: int, error: str = "") -> None:
        html = _FORM.format(action=escape(self.prefix + TOKEN_PATH), next=escape(safe_next(wanted)),
                            error=f'\n<p class="error">{escape(error)}</p>' if error else "")
        await _respond(send, status, html.encode("utf-8"), "text/html; charset=utf-8")

    async def _check(self, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_FORM_BYTES or not message.get("more_body"):
                break
        form = parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
        given = (form.get("token") or [""])[0]
        wanted = safe_next((form.get("next") or ["/"])[0])
        if not hmac.compare_digest(given.encode("utf-8"), self.secret.encode("utf-8")):
            await asyncio.sleep(1)  # slows guessing down
            await self._form(send, wanted, 403, "Wrong token.")
            return
        cookie = f"{COOKIE}={session_value(self.secret)}; Path=/; HttpOnly; SameSite=Lax"
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", quote(wanted, safe="/?&=%:@!$'()*+,;~-._").encode("latin-1")),
                                (b"set-cookie", cookie.encode("latin-1")), (b"cache-control", b"no-store"),
                                (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


class Closed:
    """A sharing explorer without a token: the endpoints no page needs (`OFF_WHEN_SHARED`) answer 404, everything
    else is passed on."""

    def __init__(self, app: ASGIApp, prefix: str = "") -> None:
        self.app = app
        self.paths = tuple(prefix.rstrip("/") + p for p in OFF_WHEN_SHARED)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path", "").rstrip("/") in self.paths:
            await _respond(send, 404, b"off in sharing mode\n", "text/plain; charset=utf-8")
            return
        await self.app(scope, receive, send)


async def _respond(send: Send, status: int, body: bytes, content_type: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"cache-control", b"no-store"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
