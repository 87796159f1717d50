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

import daphne.http_protocol
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


class BodyAsItCame(daphne.http_protocol.WebRequest):
    """daphne's request without Twisted's form parsing. Twisted parses every POST's Content-Type with the email
    package (to look for a form) and would copy a form body into `request.args`; daphne never reads `args` (it hands
    the raw body to the application, where Django parses it once). A one-event push spent ~0.07 ms of its worker's
    CPU on that parse (py-spy)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parsePOSTFormSubmission = False


def main() -> None:
    daphne.server.serverFromString = server_from_string  # type: ignore[attr-defined]
    daphne.http_protocol.WebRequest = BodyAsItCame  # type: ignore[misc]  # what daphne's HTTPFactory builds
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
