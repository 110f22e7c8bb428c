"""Who may see patient data: loopback, or an authenticated user.

``panel serve app.py`` without ``--address`` listens on every interface, so a viewer started by hand
can be reached from the network. Each new session therefore checks where its request came from:
from a loopback address (``127.0.0.0/8``, ``::1``) it opens as usual; from any other address it
opens only when Panel's authentication identified a user (``--basic-auth``, an OAuth provider) —
otherwise the session shows a refusal that says how to serve the viewer safely, and no recording,
score or file name. ``SSS_VIEWER_ALLOW_UNAUTHENTICATED=1`` lifts the rule for a deployment that
authenticates in front of Panel (a reverse proxy with its own login); say so deliberately.

Forwarded addresses (``X-Forwarded-For``, ``X-Real-Ip``) are written by whoever sends the request,
so they are believed only from a configured proxy: ``SSS_VIEWER_TRUSTED_PROXIES`` lists the proxy
addresses or networks (``127.0.0.1,10.0.0.5``, ``10.0.0.0/24``). The rule, whatever
``--use-xheaders`` says:

- the TCP peer of the connection is a trusted proxy: the client is the address the proxy forwards
  (``X-Real-Ip``, else the right-most ``X-Forwarded-For`` entry that is not itself a trusted proxy);
- otherwise: the session counts as local only when the TCP peer *and* every forwarded address are
  loopback — a forged ``X-Forwarded-For: 127.0.0.1`` from another machine is refused, and so is an
  unconfigured proxy on this machine that forwards a remote client.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Iterable, Mapping

import panel as pn

logger = logging.getLogger(__name__)

ALLOW_ENV = "SSS_VIEWER_ALLOW_UNAUTHENTICATED"
TRUSTED_PROXIES_ENV = "SSS_VIEWER_TRUSTED_PROXIES"
"""Comma-separated addresses or networks of the reverse proxies whose forwarded address is believed."""

SAFE_SERVING = """\
### This viewer shows patient data and refused a connection from {address}

It was reached from an address outside this machine, and no user is signed in. To use it:

- on this machine: open it through `http://127.0.0.1:<port>/app` (`make demo` listens on loopback only);
- from other machines: serve it with authentication and TLS, e.g.
  `panel serve app.py --address 0.0.0.0 --basic-auth credentials.json --cookie-secret <secret>
  --ssl-certfile cert.pem --ssl-keyfile key.pem`, or an OAuth provider (`--oauth-provider …`);
- behind a reverse proxy that authenticates users itself: set `{env}=1` for the server (and name
  the proxy in `{proxies_env}` so that the client's forwarded address is believed).
"""

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _ip(address: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``address`` as an IP (IPv4-mapped IPv6 unwrapped, zone dropped), or None when it is not one."""
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address.strip().split("%", 1)[0])
    except ValueError:
        return None
    return getattr(ip, "ipv4_mapped", None) or ip


def is_loopback(address: str | None) -> bool:
    """Whether ``address`` (an IPv4/IPv6 text, possibly ``::ffff:127.0.0.1``) is a loopback address."""
    ip = _ip(address)
    return ip is not None and ip.is_loopback


def trusted_proxies(spec: str | None = None) -> list[Network]:
    """The proxy networks named by ``spec`` (default: ``$SSS_VIEWER_TRUSTED_PROXIES``).

    Parameters
    ----------
    spec : str, optional
        Comma-separated addresses or networks, e.g. ``"127.0.0.1, 10.0.0.0/24"``. An entry that is
        neither is logged and left out (trusting fewer proxies only refuses more sessions).

    Returns
    -------
    list of ipaddress.IPv4Network or ipaddress.IPv6Network
    """
    spec = os.environ.get(TRUSTED_PROXIES_ENV, "") if spec is None else spec
    networks: list[Network] = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        try:
            network = ipaddress.ip_network(entry.split("%", 1)[0], strict=False)
        except ValueError:
            logger.error("%s: %r is not an address or network; it is not trusted", TRUSTED_PROXIES_ENV, entry)
            continue
        mapped = getattr(network.network_address, "ipv4_mapped", None)
        if mapped is not None and network.prefixlen >= 96:
            network = ipaddress.ip_network(f"{mapped}/{network.prefixlen - 96}")
        networks.append(network)
    return networks


def _is_trusted(address: str | None, proxies: Iterable[Network]) -> bool:
    ip = _ip(address)
    return ip is not None and any(ip.version == net.version and ip in net for net in proxies)


def _header(headers: Mapping[str, object], name: str) -> str | None:
    """A request header by case-insensitive name, list values joined with commas (None if absent)."""
    for key, value in headers.items():
        if key.lower() == name.lower():
            return ",".join(value) if isinstance(value, (list, tuple)) else str(value)
    return None


def client_address(
    peer: str | None, headers: Mapping[str, object], proxies: Iterable[Network] = ()
) -> tuple[str | None, bool]:
    """The client a request came from, and whether that client is on this machine (loopback).

    Parameters
    ----------
    peer : str or None
        The address of the TCP connection's other end (not rewritten by ``--use-xheaders``).
    headers : mapping
        The request's headers; ``X-Forwarded-For`` and ``X-Real-Ip`` are read.
    proxies : iterable of networks
        Trusted proxies (:func:`trusted_proxies`): only from these is a forwarded address believed.

    Returns
    -------
    address : str or None
        The client's address as far as it can be believed: the forwarded address when ``peer`` is a
        trusted proxy; otherwise the first non-loopback address among ``peer`` and the forwarded
        ones (the one a refusal names), or ``peer`` when all are loopback.
    local : bool
        True only when that client is loopback; see the module docstring for the rule.
    """
    proxies = list(proxies)
    forwarded_for = [e.strip() for e in (_header(headers, "X-Forwarded-For") or "").split(",") if e.strip()]
    real_ip = (_header(headers, "X-Real-Ip") or "").strip() or None
    if _is_trusted(peer, proxies) and (forwarded_for or real_ip):
        client = real_ip
        if client is None:
            hops = list(reversed(forwarded_for))
            client = next((hop for hop in hops if not _is_trusted(hop, proxies)), hops[-1])
        return client, is_loopback(client)
    for address in (peer, *forwarded_for, *([real_ip] if real_ip else [])):
        if not is_loopback(address):
            return address, False
    return peer, True


def _request():
    doc = pn.state.curdoc
    context = getattr(doc, "session_context", None) if doc is not None else None
    return getattr(context, "request", None) if context is not None else None


def peer_address(request) -> str | None:
    """The TCP peer of ``request`` (tornado keeps it even after ``--use-xheaders`` rewrote ``remote_ip``)."""
    connection = getattr(request, "connection", None)
    context = getattr(connection, "context", None) if connection is not None else None
    original = getattr(context, "_orig_remote_ip", None)
    if original:
        return original
    address = getattr(context, "address", None)
    if isinstance(address, tuple) and address:
        return str(address[0])
    return None


def request_address() -> str | None:
    """The client address of the request that opened this session (None outside a served session).

    This is :func:`client_address`'s answer for the session's request: a forwarded address only
    when the TCP peer is a trusted proxy.
    """
    request = _request()
    if request is None:
        return None
    peer = peer_address(request) or getattr(request, "remote_ip", None)
    return client_address(peer, getattr(request, "headers", None) or {}, trusted_proxies())[0]


def refusal() -> str | None:
    """Why this session must not see patient data (Markdown), or None when it may.

    In Jupyter or a script (no served session) there is no request and nothing to refuse.
    """
    if (
        os.environ.get(ALLOW_ENV) == "1"
        or pn.state.curdoc is None
        or getattr(pn.state.curdoc, "session_context", None) is None
    ):
        return None
    request = _request()
    if request is None or pn.state.user:
        return None
    peer = peer_address(request)
    if peer is None:  # no TCP peer known: only tornado's (possibly forwarded) address, trusted for nothing
        peer = getattr(request, "remote_ip", None)
    address, local = client_address(peer, getattr(request, "headers", None) or {}, trusted_proxies())
    if local:
        return None
    logger.warning(
        "Refused an unauthenticated session from %s (connection from %s; not loopback); see sss_viewer.viewer._access",
        address,
        peer,
    )
    return SAFE_SERVING.format(address=address, env=ALLOW_ENV, proxies_env=TRUSTED_PROXIES_ENV)
