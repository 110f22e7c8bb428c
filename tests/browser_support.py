"""Serve ``app.py`` with ``panel serve`` in a subprocess for the browser tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return "Debian chromium is not installed (make test installs it as root: apt-get install chromium)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served_app(env: dict[str, str], timeout_s: float = 90.0, extra_args: tuple[str, ...] = ()):
    """Start ``panel serve app.py`` on a free loopback port; yield its URL once the server answers; stop it.

    ``env["SSS_VIEWER_OUTPUT"] + ".server.log"`` receives the server's output; ``extra_args`` are
    added to the ``panel serve`` command line (e.g. ``--basic-auth``).
    """
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "panel",
        "serve",
        str(REPO / "app.py"),
        "--port",
        str(port),
        "--address",
        "127.0.0.1",
        f"--allow-websocket-origin=127.0.0.1:{port}",
        "--num-procs",
        "1",
        "--liveness",
        *extra_args,
    ]
    log = open(env["SSS_VIEWER_OUTPUT"] + ".server.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/app"
    liveness = f"http://127.0.0.1:{port}/liveness"  # answers without building an app session
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"panel serve exited with {proc.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(liveness, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"panel serve did not answer within {timeout_s} s; see {log.name}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a loaded machine: kill it, and reap it (no ResourceWarning)
            proc.kill()
            proc.wait()
        log.close()


LOAD_TIMEOUT_MS = 90_000
"""How long a browser test waits for the served app's first ranking row (a busy 2-core box can take > 30 s)."""


def app_environment(root: Path, out: Path, **settings: str) -> dict[str, str]:
    """The served app's environment: ``root`` as its data root, sidecars under ``out``, plus ``settings``.

    Parameters
    ----------
    root : Path
        The data root the file browser shows (empty: the app opens the demo).
    out : Path
        A private folder; annotations are written to ``out / "annotations"`` and the server log next to it.
    **settings : str
        Further environment variables, e.g. ``SSS_VIEWER_SCORER="sss"``.
    """
    return {
        "SSS_VIEWER_DATA_ROOT": str(root),
        "SSS_VIEWER_OUTPUT": str(out / "annotations"),
        "BOKEH_IN_DOCKER": "1",
        **settings,
    }


def open_page(
    browser, url: str, *, width: int = 1600, height: int = 1200, timeout_ms: int = LOAD_TIMEOUT_MS, **context
):
    """Open ``url`` in a new browser context and wait until the ranking table has a row; return the page.

    Parameters
    ----------
    browser : playwright.sync_api.Browser
        pytest-playwright's ``browser`` fixture.
    url : str
        The served app (the ``app_url`` fixture).
    width, height : int
        Viewport size in CSS pixels.
    timeout_ms : int
        How long to wait for the first ranking row.
    **context
        Further ``browser.new_context`` options, e.g. ``accept_downloads=True``.
    """
    page = browser.new_context(viewport={"width": width, "height": height}, **context).new_page()
    # wait for "commit" only: the selector waits below, and "load" can take > 30 s on a busy 2-core box
    page.goto(url, wait_until="commit", timeout=max(120_000, timeout_ms))
    page.wait_for_selector(".tabulator-row", timeout=timeout_ms)
    return page
