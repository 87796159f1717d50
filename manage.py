#!/usr/bin/env python
"""Django's command-line utility, with a clear stop when the database lacks pgvector."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")
    from django.core.management import execute_from_command_line

    from awp_site.db import DatabaseUnavailable, wants_database

    if wants_database(sys.argv):
        import django

        try:
            django.setup()
            from awp_site.db import exit_unless_pgvector

            exit_unless_pgvector()
        except DatabaseUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
