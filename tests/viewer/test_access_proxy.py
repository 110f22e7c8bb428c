"""Forwarded addresses are believed only from a configured proxy (the real served app, a real browser).

``--use-xheaders`` makes tornado take the client's address from ``X-Forwarded-For`` / ``X-Real-Ip``,
which any client can write. These tests reach the served app from a non-loopback address of this
machine (its own interface address, e.g. the container's ``eth0``; no other host is contacted) and
forge those headers: the session is refused. From an address named in ``SSS_VIEWER_TRUSTED_PROXIES``
the forwarded address is believed: a forwarded loopback client sees the viewer, a forwarded remote
client is refused by that address.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
from pathlib import Path

import pytest

from sss_viewer.viewer._access import client_address, trusted_proxies
from tests.browser_support import chromium_missing, served_app

REMOTE = "203.0.113.7"  # TEST-NET-3: an address outside this machine, never contacted


def _own_address() -> str | None:
    """A non-loopback IPv4 address of one of this machine's own interfaces, or None."""
    try:
        command = ["ip", "-4", "-o", "addr", "show", "scope", "global"]
        out = subprocess.run(command, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for match in re.finditer(r"\binet (\d+\.\d+\.\d+\.\d+)/", out):
        if not ipaddress.ip_address(match.group(1)).is_loopback:
            return match.group(1)
    return None


OWN = _own_address()

# -- the rule, on its own ------------------------------------------------------------------------

PROXY = trusted_proxies("10.0.0.5, 127.0.0.1, 192.168.7.0/24, ::1, not-an-address")


@pytest.mark.parametrize(
    ("peer", "headers", "expected"),
    [
        # no proxy configured for these peers: every address on the way must be loopback
        ("192.0.2.2", {}, ("192.0.2.2", False)),
        ("192.0.2.2", {"X-Forwarded-For": "127.0.0.1"}, ("192.0.2.2", False)),
        ("192.0.2.2", {"X-Real-Ip": "::1"}, ("192.0.2.2", False)),
        ("10.0.0.6", {"x-forwarded-for": "127.0.0.1", "X-REAL-IP": "127.0.0.1"}, ("10.0.0.6", False)),
        ("127.0.0.1", {}, ("127.0.0.1", True)),
        ("127.0.0.2", {"X-Forwarded-For": "127.0.0.1"}, ("127.0.0.2", True)),
        ("127.0.0.2", {"X-Forwarded-For": f"127.0.0.1, {REMOTE}"}, (REMOTE, False)),
        ("127.0.0.2", {"X-Real-Ip": REMOTE}, (REMOTE, False)),
        ("127.0.0.2", {"X-Real-Ip": "garbage"}, ("garbage", False)),
        # a trusted proxy: its forwarded address is the client
        ("10.0.0.5", {"X-Forwarded-For": "127.0.0.1"}, ("127.0.0.1", True)),
        ("10.0.0.5", {"X-Forwarded-For": REMOTE}, (REMOTE, False)),
        ("10.0.0.5", {"X-Forwarded-For": f"{REMOTE}, 192.168.7.9"}, (REMOTE, False)),  # past a second trusted hop
        ("10.0.0.5", {"X-Forwarded-For": f"127.0.0.1, {REMOTE}"}, (REMOTE, False)),  # a forged first entry is ignored
        ("10.0.0.5", {"X-Real-Ip": REMOTE, "X-Forwarded-For": "127.0.0.1"}, (REMOTE, False)),
        ("::ffff:10.0.0.5", {"X-Real-Ip": "::1"}, ("::1", True)),
        ("10.0.0.5", {}, ("10.0.0.5", False)),  # the proxy itself, forwarding nothing
        ("127.0.0.1", {"X-Forwarded-For": REMOTE}, (REMOTE, False)),
    ],
)
def test_client_address_believes_forwarded_addresses_only_from_trusted_proxies(peer, headers, expected):
    assert client_address(peer, headers, PROXY) == expected


def test_trusted_proxies_parses_addresses_and_networks_and_skips_the_rest(caplog):
    nets = trusted_proxies(" 127.0.0.1 ,10.0.0.0/24,, ::1, nonsense, ::ffff:10.1.2.3")
    assert [str(n) for n in nets] == ["127.0.0.1/32", "10.0.0.0/24", "::1/128", "10.1.2.3/32"]
    assert "'nonsense' is not an address or network" in caplog.text
    assert trusted_proxies("") == []


# -- the served app, reached from this machine's own non-loopback address ----------------------

needs_chromium = pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")
needs_own_address = pytest.mark.skipif(
    OWN is None, reason="this machine has no non-loopback IPv4 address (`ip -4 addr`)"
)


@pytest.fixture
def env(tmp_path):
    return {"SSS_VIEWER_DATA_ROOT": str(tmp_path), "SSS_VIEWER_OUTPUT": str(tmp_path / "out"), "BOKEH_IN_DOCKER": "1"}


def _serve_args() -> tuple[str, ...]:
    # listen on this machine's own interface too; served_app picks the port, so any websocket origin
    # is accepted (bokeh has no per-host port wildcard) — the pages are opened from OWN only
    return ("--use-xheaders", "--address", "0.0.0.0", "--allow-websocket-origin=*")


def _open(browser, url: str, headers: dict[str, str]):
    page = browser.new_context(extra_http_headers=headers).new_page()
    page.goto(url.replace("127.0.0.1", OWN), wait_until="commit", timeout=120_000)
    return page


def _assert_refused(page, address: str) -> None:
    page.wait_for_selector(f"text=/refused a connection from {re.escape(address)}/", timeout=60_000)
    assert page.locator(".tabulator-row").count() == 0  # no ranking, no recording
    assert page.get_by_text(re.compile("LTP1|synthetic SEEG")).count() == 0


@pytest.mark.parametrize(
    "forged", [{"X-Forwarded-For": "127.0.0.1"}, {"X-Real-Ip": "::1"}], ids=["x-forwarded-for", "x-real-ip"]
)
@pytest.mark.browser
@needs_chromium
@needs_own_address
def test_forged_forwarded_loopback_from_another_address_is_refused(browser, env, forged):
    with served_app(env, extra_args=_serve_args()) as url:
        page = _open(browser, url, forged)
        _assert_refused(page, OWN)
        page.context.close()
    log = Path(env["SSS_VIEWER_OUTPUT"] + ".server.log").read_text()
    assert f"Refused an unauthenticated session from {OWN} (connection from {OWN}" in log


@pytest.mark.browser
@needs_chromium
@needs_own_address
def test_a_trusted_proxy_forwards_the_client_address(browser, env):
    env["SSS_VIEWER_TRUSTED_PROXIES"] = f"{OWN}, 10.0.0.5"
    with served_app(env, extra_args=_serve_args()) as url:
        remote = _open(browser, url, {"X-Forwarded-For": f"127.0.0.1, {REMOTE}"})  # the proxy's client: REMOTE
        _assert_refused(remote, REMOTE)
        remote.context.close()
        local = _open(browser, url, {"X-Real-Ip": "127.0.0.1"})  # the proxy forwards a client on this machine
        local.wait_for_selector(".tabulator-row", timeout=90_000)
        assert local.get_by_text("refused a connection").count() == 0
        local.context.close()
    log = Path(env["SSS_VIEWER_OUTPUT"] + ".server.log").read_text()
    assert f"Refused an unauthenticated session from {REMOTE} (connection from {OWN}" in log
    assert log.count("Refused an unauthenticated session") == 1
