"""The app takes no files, so nobody may store one on the server.

Gradio serves `POST /gradio_api/upload` (and multipart bodies on a few other routes) for every app, file
inputs or not, and serves what was uploaded back to anyone: unlimited by default. Two locks, both passed
to `demo.launch` by `launch_options()`:
- `max_file_size=0`: Gradio's own limit (documented launch argument); any non-empty file is refused (413).
- `RefuseUploads`, an ASGI middleware in front of every route: the upload routes and any multipart request
  are answered 403 before their body is read, so not even an empty file is written to disk.
"""
from __future__ import annotations

from starlette.middleware import Middleware

MAX_FILE_SIZE = 0  # bytes
UPLOAD_PATHS = ("/upload", "/upload/", "/process_recording", "/process_recording/")
MESSAGE = b"This app takes no files: uploads are refused."


class RefuseUploads:
    """ASGI middleware: 403 for POST/PUT to an upload route or with a multipart/form-data body."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and self.is_upload(scope):
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(MESSAGE)).encode()), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": MESSAGE})
            return
        await self.app(scope, receive, send)

    @staticmethod
    def is_upload(scope) -> bool:
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            return False
        if scope.get("path", "").endswith(UPLOAD_PATHS):
            return True
        content_type = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-type"), b"")
        return content_type.strip().lower().startswith(b"multipart/")


def launch_options() -> dict:
    """Keyword arguments for `Blocks.launch` that close the upload routes."""
    return {"max_file_size": MAX_FILE_SIZE, "app_kwargs": {"middleware": [Middleware(RefuseUploads)]}}
