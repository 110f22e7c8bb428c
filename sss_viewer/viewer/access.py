"""Who may see patient data: loopback, or an authenticated user.

``panel serve app.py`` without ``--address`` listens on every interface, so a viewer started by hand
can be reached from the network. Each new session therefore checks where its request came from:
from a loopback address (``127.0.0.0/8``, ``::1``) it opens as usual; from any other address it
opens only when Panel's authentication identified a user (``--basic-auth``, an OAuth provider) —
otherwise the session shows a refusal that says how to serve the viewer safely, and no recording,
score or file name. ``SSS_VIEWER_ALLOW_UNAUTHENTICATED=1`` lifts the rule for a deployment that
authenticates in front of Panel (a reverse proxy with its own login); say so deliberately.
"""

from __future__ import annotations

import ipaddress
import logging
import os

import panel as pn

logger = logging.getLogger(__name__)

ALLOW_ENV = "SSS_VIEWER_ALLOW_UNAUTHENTICATED"

SAFE_SERVING = """\
### This viewer shows patient data and refused a connection from {address}

It was reached from an address outside this machine, and no user is signed in. To use it:

- on this machine: open it through `http://127.0.0.1:<port>/app` (`make demo` listens on loopback only);
- from other machines: serve it with authentication and TLS, e.g.
  `panel serve app.py --address 0.0.0.0 --basic-auth credentials.json --cookie-secret <secret>
  --ssl-certfile cert.pem --ssl-keyfile key.pem`, or an OAuth provider (`--oauth-provider …`);
- behind a reverse proxy that authenticates users itself: set `{env}=1` for the server.
"""


def is_loopback(address: str | None) -> bool:
    """Whether ``address`` (an IPv4/IPv6 text, possibly ``::ffff:127.0.0.1``) is a loopback address."""
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def request_address() -> str | None:
    """The remote address of the request that opened this session (None outside a served session)."""
    doc = pn.state.curdoc
    context = getattr(doc, "session_context", None) if doc is not None else None
    request = getattr(context, "request", None) if context is not None else None
    return getattr(request, "remote_ip", None) if request is not None else None


def refusal() -> str | None:
    """Why this session must not see patient data (Markdown), or None when it may.

    In Jupyter or a script (no served session) there is no request and nothing to refuse.
    """
    if os.environ.get(ALLOW_ENV) == "1" or pn.state.curdoc is None or getattr(pn.state.curdoc, "session_context", None) is None:
        return None
    address = request_address()
    if address is None or is_loopback(address) or pn.state.user:
        return None
    logger.warning("Refused an unauthenticated session from %s (not loopback); see sss_viewer.viewer.access", address)
    return SAFE_SERVING.format(address=address, env=ALLOW_ENV)
