"""AWP_SECRETS_FAIL_CLOSED as the detector reads it: from Django's settings, once, so the detector modules
(`state.failclosed`, `state.redaction`, `state.detection`) stay pure and a test's override_settings still counts."""

from __future__ import annotations

_enabled: list[bool] = []  # the setting, read once (per event it cost more than the pass over a short text)


def fail_closed_enabled() -> bool:
    """AWP_SECRETS_FAIL_CLOSED from the settings when Django is configured; on otherwise."""
    if _enabled:
        return _enabled[0]
    enabled = True
    try:
        from django.conf import settings
        from django.core.signals import setting_changed

        if settings.configured:
            enabled = bool(getattr(settings, "AWP_SECRETS_FAIL_CLOSED", True))
            setting_changed.connect(_forget_setting, dispatch_uid="awp-fail-closed")
            _enabled.append(enabled)
    except ImportError:  # pragma: no cover - outside the project's venv
        pass
    return enabled


def _forget_setting(*, setting: str, **_kwargs: object) -> None:
    if setting == "AWP_SECRETS_FAIL_CLOSED":
        _enabled.clear()
