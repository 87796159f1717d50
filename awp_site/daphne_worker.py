"""One daphne worker on a listening socket it inherited from `manage.py awp_serve` (`--fd N`).

`python -m awp_site.daphne_worker --fd N awp_site.asgi:application` is `python -m daphne …` with one change:
daphne asks Twisted for an "fd:" endpoint, which Twisted finds through its plugin cache
(twisted/plugins/dropin.cache in site-packages). Every Twisted process on the machine may rewrite that file,
and a worker that read it half-written found no "fd" endpoint and died at start (tests/awp_site/test_serve.py
caught it). The endpoint is one constructor, so it is built here and the cache is never consulted for it.
"""

from __future__ import annotations

import socket
from typing import Any

import daphne.server
from daphne.cli import CommandLineInterface
from twisted.internet.endpoints import AdoptedStreamServerEndpoint, serverFromString


def server_from_string(reactor: Any, description: str) -> Any:
    """Twisted's serverFromString, with daphne's "fd:fileno=N" built directly (no plugin lookup)."""
    if not description.startswith("fd:"):
        return serverFromString(reactor, description)
    params = dict(part.split("=", 1) for part in description[len("fd:") :].split(":") if "=" in part)
    fileno = int(params["fileno"])
    probe = socket.socket(fileno=fileno)  # only to read the address family of the inherited socket
    family = probe.family
    probe.detach()
    return AdoptedStreamServerEndpoint(reactor, fileno, family)


def main() -> None:
    daphne.server.serverFromString = server_from_string  # type: ignore[attr-defined]
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
