"""`manage.py awp_mcp --experiment SLUG --token …`: the memory MCP server over stdio, for clients that start a process."""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_mcp.principal import authenticate
from memory_mcp.server import build_server


class Command(BaseCommand):
    help = "Serve the experiment's memory over MCP on stdin/stdout (the token's scopes decide the tools)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--experiment", required=True, help="the experiment's slug (the token must belong to it)")
        parser.add_argument("--token", default="", help="an API token of the experiment (default: $AWP_MCP_TOKEN)")

    def handle(self, *args: Any, **options: Any) -> None:
        secret = options["token"] or os.environ.get("AWP_MCP_TOKEN", "")
        token = authenticate(secret) if secret else None
        if token is None:
            raise CommandError("Unknown or revoked token: pass --token (or AWP_MCP_TOKEN) with an API token of the experiment.")
        if token.experiment.slug != options["experiment"]:
            raise CommandError(f"This token belongs to another experiment than '{options['experiment']}'.")
        # stdout carries the protocol from here on; Django's own messages go to stderr.
        anyio.run(build_server(stdio_secret=secret).run_stdio_async)
