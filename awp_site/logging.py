"""A logging filter that masks sensitive values in log lines (R14 on the way out).

Log lines have no experiment in scope, so they get the key and pattern masks of the redaction engine (every
text shape of a sensitive key, connection-URL passwords, Bearer tokens, private keys, cloud key formats) with
the global sensitive list; known-secret value masking needs an experiment and happens where one is in scope.
"""

from __future__ import annotations

import logging

from django.conf import settings

REDACTED = "[redacted]"


class RedactingFilter(logging.Filter):
    """Rewrite the rendered message so sensitive values never reach a log sink."""

    def filter(self, record: logging.LogRecord) -> bool:
        # The pure engine (no models): safe to import while logging is being configured.
        from state.redaction import redact_text, sensitive_set

        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the logger's problem, not ours
            return True
        sensitive = sensitive_set(getattr(settings, "AWP_SENSITIVE_FIELDS", ["password", "token"]))
        redacted = redact_text(message, sensitive)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True
