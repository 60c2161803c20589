"""The requests the app refuses before Gradio reads them: files (nobody may store one on the server), bodies
larger than its texts need, and calls of an endpoint that is not public.

Gradio serves `POST /gradio_api/upload` (and multipart bodies on a few other routes) for every app, file
inputs or not, and serves what was uploaded back to anyone: unlimited by default; and it reads and decodes a
request's whole body before any handler can check its size. Four locks, all passed to `demo.launch` by
`launch_options()`:
- `max_file_size=0`: Gradio's own limit (documented launch argument); any non-empty file is refused (413).
- `RefuseUploads`, an ASGI middleware in front of every route: the upload routes and any multipart request
  are answered 403 before their body is read, so not even an empty file is written to disk.
- `RefuseLargeBodies`, the same kind of middleware: a body larger than any request of the app needs
  (MAX_BODY_BYTES) is answered 413 before Gradio reads it. The handlers' own limit (`clean_text`'s MAX_CHARS)
  comes only after Gradio has decoded the whole JSON: a 100-million-character text took 5.5 s and 260 MB of
  memory, which the server kept, to be told it is too long.
- `RefuseUnknownCalls`: `POST /gradio_api/call/<name>` for a name that is no public endpoint is answered 404,
  naming it. Gradio answered a misspelt name 500, with a traceback in the server's log, and ran the page's own
  (private) events when a raw HTTP client named them there, though gradio_client and the API page know only the
  public ones.
"""
from __future__ import annotations

import re

from starlette.middleware import Middleware

from .validation import MAX_CHARS

MAX_FILE_SIZE = 0  # bytes
UPLOAD_PATHS = ("/upload", "/upload/", "/process_recording", "/process_recording/")
MESSAGE = b"This app takes no files: uploads are refused."
# A request's body: room for 4 texts of MAX_CHARS characters (no endpoint takes more than 3: an analogy's words;
# the fill-mask comparison's text, candidate words and model), each character at most 12 bytes once written
# as JSON (an emoji as "\ud83d\ude00", as Python's json.dumps writes it), and 64 KiB for the rest (ids, numbers,
# the session): about 9.7 MB. A browser or gradio_client writes UTF-8, at most 4 bytes a character.
MAX_BODY_BYTES = 4 * 12 * MAX_CHARS + 64 * 1024
# the simple API's route, as Gradio serves it (also as /call/v2/<name>); the result is then read with GET
CALL_ROUTE = re.compile(r"/gradio_api/call/(?:v2/)?([^/]+)/?$")
TOO_LARGE = (f"The request is too large: this app reads texts of at most {MAX_CHARS:,} characters, "
             f"in requests of at most {MAX_BODY_BYTES:,} bytes.").encode()


async def _refuse(send, status: int, message: bytes) -> None:
    """Answer `status` with a plain-text `message`, and close the connection (the body is left unread)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(message)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": message})


def _header(scope, name: bytes) -> bytes | None:
    """A request header's value (the first, if repeated), or None."""
    return next((v for k, v in scope.get("headers", []) if k.lower() == name), None)


class RefuseUploads:
    """ASGI middleware: 403 for POST/PUT/PATCH to an upload route or with a multipart/form-data body."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and self.is_upload(scope):
            await _refuse(send, 403, MESSAGE)
            return
        await self.app(scope, receive, send)

    @staticmethod
    def is_upload(scope) -> bool:
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            return False
        if scope.get("path", "").endswith(UPLOAD_PATHS):
            return True
        content_type = _header(scope, b"content-type") or b""
        return content_type.strip().lower().startswith(b"multipart/")


class RefuseLargeBodies:
    """ASGI middleware: 413 for a request whose body is over MAX_BODY_BYTES: at once when its Content-Length
    says so; a body sent without one (chunked) is read here, counting, and handed on only once whole and within
    the bound, so that hardly more than MAX_BODY_BYTES of it is ever read (a chunk at most)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            length = _header(scope, b"content-length")  # digits: uvicorn answers a malformed one 400 itself
            if length is None:
                receive = await self.read_within_bound(receive)
            if receive is None or (length is not None and int(length) > MAX_BODY_BYTES):
                await _refuse(send, 413, TOO_LARGE)
                return
        await self.app(scope, receive, send)

    @staticmethod
    async def read_within_bound(receive):
        """A body sent without Content-Length (chunked) read whole: a `receive` that hands its messages on, then
        the client's next ones; None as soon as it is over MAX_BODY_BYTES (and read no further)."""
        messages, size = [], 0
        while not messages or (messages[-1]["type"] == "http.request" and messages[-1].get("more_body")):
            messages.append(await receive())
            size += len(messages[-1].get("body", b""))
            if size > MAX_BODY_BYTES:
                return None

        async def replay():
            return messages.pop(0) if messages else await receive()

        return replay


class RefuseUnknownCalls:
    """ASGI middleware: 404 for POST /gradio_api/call/<name> (or /call/v2/<name>) where <name> is no public
    endpoint of the page being served (Starlette puts its app in the scope: Gradio's, whose blocks list the
    events). The page runs its own events through /gradio_api/queue/join, by their index, which this leaves as it
    is: those requests meet the same checks and queues as the public endpoints' requests."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        called = scope["type"] == "http" and scope.get("method") == "POST" and CALL_ROUTE.search(scope.get("path", ""))
        blocks = called and getattr(scope.get("app"), "get_blocks", None)
        if blocks and called[1] not in public_endpoints(blocks()):
            await _refuse(send, 404, no_endpoint(called[1]))
            return
        await self.app(scope, receive, send)


def public_endpoints(blocks) -> set[str]:
    """The api_names of `blocks`' public events (those the API page lists and gradio_client calls)."""
    return {fn.api_name for fn in blocks.fns.values() if fn.api_name and fn.api_visibility == "public"}


def no_endpoint(name: str) -> bytes:
    shown = name if len(name) <= 60 else name[:59] + "…"
    return (f"This app has no public endpoint /{shown}: its endpoints are listed at /gradio_api/info "
            "(gradio_client: Client(...).view_api()).").encode()


def launch_options() -> dict:
    """Keyword arguments for `Blocks.launch` that close the upload routes, refuse oversized bodies and answer a call
    of no public endpoint 404."""
    return {"max_file_size": MAX_FILE_SIZE,
            "app_kwargs": {"middleware": [Middleware(RefuseUploads), Middleware(RefuseLargeBodies),
                                          Middleware(RefuseUnknownCalls)]}}
