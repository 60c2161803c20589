"""The public Space's guards against stored files, huge bodies and calls of no public endpoint
(demo/request_guards.py), driven here directly as ASGI middlewares in front of a recording app: no server is started
(tests/test_app_api.py sends the same requests to a running app.py, in the slow suite)."""
import asyncio
from types import SimpleNamespace

import pytest

from demo.request_guards import (MAX_BODY_BYTES, MAX_FILE_SIZE, MESSAGE, TOO_LARGE, RefuseLargeBodies,
                                 RefuseUnknownCalls, RefuseUploads, launch_options, no_endpoint)


class Client:
    """The client's side of one request: the `receive` of its body's messages (then a disconnect, as a server says
    the client left), what the middleware `send`s back, and how many messages were read."""

    def __init__(self, chunks: list[bytes]):
        self.messages = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
                         for i, chunk in enumerate(chunks)]
        self.read = 0
        self.sent = []

    async def receive(self):
        self.read += 1
        return self.messages.pop(0) if self.messages else {"type": "http.disconnect"}

    async def send(self, message):
        self.sent.append(message)

    def answer(self) -> tuple[int, bytes]:
        """(status, body) the middleware answered."""
        start, body = self.sent
        assert start["type"] == "http.response.start" and body["type"] == "http.response.body", self.sent
        return start["status"], body["body"]


class Inner:
    """The app behind the middlewares (Gradio's): records that it was called, and reads the whole body."""

    def __init__(self):
        self.calls = 0
        self.body = None
        self.after = None

    async def __call__(self, scope, receive, send):
        self.calls += 1
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.body = body
        self.after = await receive()  # the next message is the client's own again
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def scope(method="POST", path="/gradio_api/queue/join", headers=()) -> dict:
    return {"type": "http", "method": method, "path": path, "headers": list(headers)}


def served(middleware, request: dict, client: Client) -> Inner:
    inner = Inner()
    asyncio.run(middleware(inner)(request, client.receive, client.send))
    return inner


def chunked(size: int, chunk: int = 1 << 20) -> list[bytes]:
    """A body of `size` bytes in chunks of `chunk` (the last one shorter), each chunk's bytes its own."""
    return [bytes([i % 251]) * min(chunk, size - start) for i, start in enumerate(range(0, size, chunk))]


def test_a_chunked_body_over_the_bound_is_answered_413_and_read_no_further():
    """A body sent without Content-Length is counted as it is read: one byte over MAX_BODY_BYTES is refused 413,
    the app behind never called, and no message read after the one that went over."""
    chunks = chunked(MAX_BODY_BYTES + 1)
    client = Client([*chunks, b"never read"])
    inner = served(RefuseLargeBodies, scope(), client)
    assert inner.calls == 0
    assert client.answer() == (413, TOO_LARGE)
    assert client.read == len(chunks)


def test_a_chunked_body_of_exactly_the_bound_reaches_the_app_whole():
    """Read here to be counted, the body is replayed to the app intact, message by message; after it, the app's
    next `receive` is the client's own (here: the client left)."""
    chunks = chunked(MAX_BODY_BYTES)
    client = Client(chunks)
    inner = served(RefuseLargeBodies, scope(), client)
    assert inner.calls == 1 and inner.body == b"".join(chunks) and len(inner.body) == MAX_BODY_BYTES
    assert inner.after == {"type": "http.disconnect"}
    assert client.answer() == (200, b"ok")


@pytest.mark.parametrize("length, status", [(MAX_BODY_BYTES + 1, 413), (MAX_BODY_BYTES, 200)])
def test_a_content_length_over_the_bound_is_answered_413_before_the_body_is_read(length, status):
    """With a Content-Length, the body is not read here: over the bound, refused unread; within it, handed on."""
    client = Client([b"{}"])
    inner = served(RefuseLargeBodies, scope(headers=[(b"content-length", str(length).encode())]), client)
    assert client.answer()[0] == status
    assert (inner.calls, client.read) == ((0, 0) if status == 413 else (1, 2))


@pytest.mark.parametrize("request_scope", [
    scope(path="/gradio_api/upload"),
    scope(method="PUT", path="/gradio_api/upload/"),
    scope(path="/gradio_api/process_recording"),
    scope(path="/gradio_api/component_server", headers=[(b"Content-Type", b" Multipart/Form-Data; boundary=x")]),
])
def test_an_upload_is_answered_403_before_its_body_is_read(request_scope):
    """The upload routes, and a multipart body on any route: 403 with the app's message, the body left unread and
    the app behind never called (no file is written, not even an empty one)."""
    client = Client([b"--x\r\nfile\r\n--x--"])
    inner = served(RefuseUploads, request_scope, client)
    assert inner.calls == 0 and client.read == 0
    assert client.answer() == (403, MESSAGE)


@pytest.mark.parametrize("request_scope", [
    scope(method="GET", path="/gradio_api/upload"),  # no body: nothing is stored
    scope(headers=[(b"content-type", b"application/json")]),
])
def test_other_requests_reach_the_app(request_scope):
    client = Client([b'{"data": []}'])
    inner = served(RefuseUploads, request_scope, client)
    assert inner.calls == 1 and inner.body == b'{"data": []}'
    assert client.answer() == (200, b"ok")


class Served:
    """What Starlette puts in a request's scope as its "app": Gradio's, whose blocks list the page's events."""

    def __init__(self, *events: tuple[str | None, str]):
        self.blocks = SimpleNamespace(fns={i: SimpleNamespace(api_name=name, api_visibility=visibility)
                                           for i, (name, visibility) in enumerate(events)})

    def get_blocks(self):
        return self.blocks


SERVED = Served(("fill_mask", "public"), ("fill_mask_ui", "private"), (None, "private"))


@pytest.mark.parametrize("path", ["/gradio_api/call/fill_mask", "/gradio_api/call/fill_mask/",
                                  "/gradio_api/call/v2/fill_mask"])
def test_a_call_of_a_public_endpoint_reaches_the_app(path):
    client = Client([b'{"data": ["Paris is <mask>."]}'])
    inner = served(RefuseUnknownCalls, {**scope(path=path), "app": SERVED}, client)
    assert inner.calls == 1 and client.answer() == (200, b"ok")


@pytest.mark.parametrize("path, name", [("/gradio_api/call/fill_mask_ui", "fill_mask_ui"),  # the page's own
                                        ("/gradio_api/call/v2/fill_mask_ui/", "fill_mask_ui"),
                                        ("/gradio_api/call/nosuch", "nosuch"),  # was 500, a traceback in the log
                                        ("/gradio_api/call/v2", "v2")])
def test_a_call_of_no_public_endpoint_is_answered_404_naming_it(path, name):
    client = Client([b'{"data": []}'])
    inner = served(RefuseUnknownCalls, {**scope(path=path), "app": SERVED}, client)
    assert inner.calls == 0 and client.read == 0
    status, message = client.answer()
    assert status == 404 and message == no_endpoint(name)
    assert message.decode().startswith(f"This app has no public endpoint /{name}: its endpoints are listed at ")


def test_a_long_unknown_name_is_cut_in_the_message():
    assert no_endpoint("x" * 500).decode().startswith(f"This app has no public endpoint /{'x' * 59}…:")


@pytest.mark.parametrize("request_scope", [
    scope(path="/gradio_api/queue/join"),  # the page's own route for every event, by its index
    scope(method="GET", path="/gradio_api/call/nosuch/some-event-id"),  # reading a result: Gradio's to answer
    {**scope(path="/gradio_api/call/nosuch"), "app": object()},  # an app that lists no blocks: left to it
])
def test_other_routes_are_left_to_the_app(request_scope):
    client = Client([b'{"data": []}'])
    inner = served(RefuseUnknownCalls, {"app": SERVED, **request_scope}, client)
    assert inner.calls == 1 and client.answer() == (200, b"ok")


@pytest.mark.parametrize("middleware", [RefuseUploads, RefuseLargeBodies, RefuseUnknownCalls])
def test_a_scope_other_than_http_is_handed_on_untouched(middleware):
    """The server's lifespan messages (and a websocket) are not requests with a body: handed on as they are."""
    client = Client([])
    inner = served(middleware, {"type": "lifespan"}, client)
    assert inner.calls == 1 and client.read == 0 and client.sent == []


def test_launch_options_put_the_guards_in_front_of_every_route():
    """Gradio's own file limit, and the three middlewares: uploads refused first, then the size bound, then a call
    of no public endpoint."""
    options = launch_options()
    assert options["max_file_size"] == MAX_FILE_SIZE == 0
    assert [middleware.cls for middleware in options["app_kwargs"]["middleware"]] == [
        RefuseUploads, RefuseLargeBodies, RefuseUnknownCalls]
