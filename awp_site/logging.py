"""A logging filter that masks values of sensitive keys in log lines (R14 on the way out)."""

from __future__ import annotations

import logging
import re

from django.conf import settings

REDACTED = "[redacted]"


def _pattern() -> re.Pattern[str]:
    names = "|".join(re.escape(name) for name in getattr(settings, "AWP_SENSITIVE_FIELDS", ["password", "token"]))
    # key=value, key: value, "key": "value" — the shapes sensitive values take in log lines.
    return re.compile(rf"""(?i)(["']?\b(?:\w*(?:{names})\w*)\b["']?\s*[:=]\s*)(["'][^"']*["']|[^\s,;}}]+)""")


class RedactingFilter(logging.Filter):
    """Rewrite the rendered message so sensitive values never reach a log sink."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the logger's problem, not ours
            return True
        redacted = _pattern().sub(lambda m: f"{m.group(1)}{REDACTED}", message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True
