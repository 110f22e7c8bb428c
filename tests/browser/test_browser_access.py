"""Patient data is not served beyond loopback without authentication (the real served app, a real browser).

A request from another address is made the way a reverse proxy reports one: the server runs with
``--use-xheaders`` and the browser sends ``X-Real-IP`` — no traffic leaves this machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sss_viewer.viewer._access import is_loopback
from tests.browser_support import chromium_missing, served_app

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")]

REMOTE = {"X-Real-IP": "203.0.113.7"}  # TEST-NET-3: an address outside this machine, never contacted


@pytest.fixture
def env(tmp_path):
    return {"SSS_VIEWER_DATA_ROOT": str(tmp_path), "SSS_VIEWER_OUTPUT": str(tmp_path / "out"), "BOKEH_IN_DOCKER": "1"}


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.5.6.7", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("203.0.113.7", False),
        ("10.0.0.2", False),
        ("::ffff:192.168.1.4", False),
        ("", False),
        ("not-an-ip", False),
    ],
)
def test_is_loopback(address, loopback):
    assert is_loopback(address) is loopback


def test_an_unauthenticated_remote_session_is_refused_and_loopback_is_not(browser, env):
    with served_app(env, extra_args=("--use-xheaders",)) as url:
        remote = browser.new_context(extra_http_headers=REMOTE).new_page()
        remote.goto(url, wait_until="commit", timeout=120_000)
        remote.wait_for_selector("text=/refused a connection from 203.0.113.7/", timeout=60_000)
        assert remote.get_by_text("--basic-auth", exact=False).count() >= 1
        assert remote.locator(".tabulator-row").count() == 0  # no ranking, no recording
        assert remote.get_by_text(re.compile("LTP1|synthetic SEEG")).count() == 0
        remote.context.close()
        local = browser.new_context().new_page()
        local.goto(url, wait_until="commit", timeout=120_000)
        local.wait_for_selector(".tabulator-row", timeout=90_000)
        assert local.get_by_text("refused a connection").count() == 0
        local.context.close()
    log = Path(env["SSS_VIEWER_OUTPUT"] + ".server.log").read_text()
    assert "Refused an unauthenticated session from 203.0.113.7" in log


def test_a_signed_in_remote_user_sees_the_viewer(browser, env, tmp_path):
    credentials = tmp_path / "credentials.json"
    credentials.write_text(json.dumps({"clinician": "a long test password"}))
    args = ("--use-xheaders", "--basic-auth", str(credentials), "--cookie-secret", "x" * 32)
    with served_app(env, extra_args=args) as url:
        page = browser.new_context(extra_http_headers=REMOTE).new_page()
        page.goto(url, wait_until="commit", timeout=120_000)
        page.wait_for_selector("input[name=username]", timeout=60_000)  # Panel's login page first
        page.fill("input[name=username]", "clinician")
        page.fill("input[name=password]", "a long test password")
        page.locator("button, input[type=submit]").first.click()
        page.wait_for_selector(".tabulator-row", timeout=90_000)
        assert page.get_by_text("refused a connection").count() == 0
        page.context.close()
