"""The upload limit holds on the server, chunk by chunk, and abandoned uploads are freed.

The browser checks ``max_file_size`` before it sends a file; a client that sends the drop zone's
chunks itself skips that check. These tests are such a client: a real Panel server (in this
process, so the widget's buffers can be weighed) serves a ``RecordingBrowser``; a Bokeh client
session sends ``upload_event`` messages over the websocket exactly as the browser's FileDropper
does (``{name, chunk, total_chunks, type, data}``, the bytes as a binary buffer). What the server
stores for uploads — Panel's per-file chunk buffers plus finished files in ``value`` — must stay
within the limit, and drop to nothing when an upload is refused, idles, or its session closes.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import bokeh.io.doc as bokeh_doc
import panel as pn
import pytest
from bokeh.client import pull_session
from bokeh.core.serialization import Serializable
from bokeh.document.events import MessageSentEvent
from bokeh.io.state import curstate
from panel.models.file_dropper import FileDropper as BkFileDropper

from sss_viewer.viewer._loader import FILES_HELD, MB, UPLOAD_IDLE_ENV, RecordingBrowser
from tests.browser_support import _free_port

LIMIT_MB = 1


class _Chunk(Serializable):
    """One ``upload_event`` as the browser's FileDropper sends it (the model by reference)."""

    def __init__(self, model, data: dict):
        self.model, self.data = model, data

    def to_serializable(self, serializer):
        values = {"type": "map", "entries": [["model", {"id": self.model.id}], ["data", serializer.encode(self.data)]]}
        return {"type": "event", "name": "upload_event", "values": values}


@pytest.fixture(scope="module")
def server():
    """A Panel server of one ``RecordingBrowser`` per session (limit 1 MB); yields (url, browsers made)."""
    made: list[RecordingBrowser] = []

    def app():
        made.append(RecordingBrowser(max_upload_mb=LIMIT_MB))
        return made[-1]

    port = _free_port()
    srv = pn.serve(
        {"app": app},
        port=port,
        address="127.0.0.1",
        threaded=True,
        show=False,
        start=True,
        websocket_origin=[f"127.0.0.1:{port}"],
        unused_session_lifetime_milliseconds=300,
        check_unused_sessions_milliseconds=300,
    )
    try:
        assert _until(lambda: _listening(port), 30), "the Panel server did not start"
        yield f"http://127.0.0.1:{port}/app", made
    finally:
        srv.stop()
        srv.join(timeout=10)
        # the served sessions were destroyed: leave no Panel state or Bokeh document of theirs to later tests
        pn.state.reset()
        curstate().reset()
        # Bokeh's patched-curdoc stack is global, not per thread: a session the server destroyed mid-callback can
        # leave its (destroyed) document on it, where the main thread's curdoc() would find it
        bokeh_doc._PATCHED_CURDOCS.clear()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except RuntimeError:  # a dict changed size while the server thread was writing: look again
            pass
        time.sleep(0.05)
    return condition()


def stored(browser: RecordingBrowser) -> int:
    """Bytes the server holds for this session's uploads: Panel's chunk buffers plus finished files."""
    dropper = browser._dropper
    buffers = sum(len(chunk) for chunks in list(dropper._file_buffer.values()) for chunk in list(chunks))
    done = sum(len(v) for v in list(dropper.value.values()))
    return buffers + done


_CLIENT_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bokeh-client")
"""The Bokeh client's synchronous session runs an event loop of its own: on a thread of its own, so that
it works whatever loop the main thread has running (pytest-playwright's, after a browser test)."""


class Client:
    """A Bokeh client session of the served app that sends FileDropper chunks itself."""

    def __init__(self, url: str, made: list[RecordingBrowser]):
        before = len(made)
        self.session = _CLIENT_THREAD.submit(pull_session, url=url).result(timeout=60)
        assert _until(lambda: len(made) > before, 20)
        self.browser = made[-1]
        doc = self.session.document
        self.model = next(iter(doc.select({"type": BkFileDropper})))

    def send(self, name: str, chunk: int, total: int, size: int) -> None:
        _CLIENT_THREAD.submit(self._send, name, chunk, total, size).result(timeout=60)

    def _send(self, name: str, chunk: int, total: int, size: int) -> None:
        data = {"name": name, "chunk": chunk, "total_chunks": total, "type": "application/octet-stream"}
        data["data"] = b"x" * size  # sent as a binary buffer, like the browser's ArrayBuffer
        doc = self.session.document
        doc.callbacks.trigger_on_change(MessageSentEvent(doc, "bokeh_event", _Chunk(self.model, data)))
        self.session.force_roundtrip()  # the server has handled the chunk when this returns

    def close(self) -> None:
        _CLIENT_THREAD.submit(self.session.close).result(timeout=60)


def test_chunks_beyond_the_limit_are_refused_and_not_kept(server):
    client = Client(*server)
    try:
        peak = 0
        for chunk in range(1, 21):  # 20 × 0.3 MB = 6 MB announced as one 300-chunk file, against a 1 MB limit
            client.send("big.edf", chunk, 300, 300_000)
            peak = max(peak, stored(client.browser))
        assert peak <= LIMIT_MB * MB
        assert stored(client.browser) == 0  # refused at the 4th chunk and discarded; later chunks dropped unread
        assert "over the 1 MB upload limit" in client.browser.error
        client.send("small.edf", 1, 2, 1000)  # a new upload under the limit is accepted afterwards
        assert stored(client.browser) == 1000
    finally:
        client.close()


def test_many_files_each_under_the_limit_are_bounded_together(server):
    client = Client(*server)
    try:
        peak = 0
        for i in range(12):  # 12 unfinished files of 0.9 MB each
            client.send(f"part{i}.edf", 1, 2, 900_000)
            peak = max(peak, stored(client.browser))
        assert peak <= FILES_HELD * LIMIT_MB * MB
        assert "at most 3 MB are kept" in client.browser.error
    finally:
        client.close()


def test_an_unfinished_upload_is_freed_when_its_session_closes(server):
    client = Client(*server)
    client.send("abandoned.edf", 1, 3, 900_000)
    assert stored(client.browser) == 900_000
    client.close()
    assert _until(lambda: stored(client.browser) == 0, 15), "the abandoned upload outlived its session"


def test_an_unfinished_upload_without_chunks_is_freed(server, monkeypatch):
    monkeypatch.setenv(UPLOAD_IDLE_ENV, "1")
    client = Client(*server)
    try:
        assert client.browser._dropper.idle_s == 1
        client.send("stalled.edf", 1, 3, 900_000)
        assert stored(client.browser) == 900_000
        assert _until(lambda: stored(client.browser) == 0, 10), "the stalled upload was kept"
        assert client.session.connected  # freed by the idle rule, not by the session closing
    finally:
        client.close()


def test_a_complete_upload_within_the_limit_still_arrives(server, tmp_path):
    client = Client(*server)
    try:
        client.browser.upload_dir = tmp_path
        client.send("notes.edf", 1, 2, 600_000)
        client.send("notes.edf", 2, 2, 300_000)
        # the file reached the browser's upload handling (it is not a valid EDF, so it is refused there)
        assert _until(lambda: "could not be read" in client.browser.error, 10), client.browser.error
        assert "upload limit" not in client.browser.error
    finally:
        client.close()
