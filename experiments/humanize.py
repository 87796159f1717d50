"""Numbers as people read them: durations ("3 d 14 h", "1.2 s") and counts with thousands separators. Pure."""

from __future__ import annotations

from decimal import Decimal

_UNITS = (("d", 86400), ("h", 3600), ("min", 60))


def human_duration(seconds: float | Decimal | None) -> str:
    """Two units at most, largest first: 0.4 s, 1.2 s, 59 s, 4 min 3 s, 2 h 5 min, 3 d 14 h; '–' when unknown."""
    if seconds is None or seconds < 0:
        return "–"
    seconds = float(seconds)
    if seconds < 10:
        return f"{seconds:.1f} s".replace(".0 s", " s") if seconds >= 1 or seconds == 0 else f"{seconds:.2g} s"
    if seconds < 60:
        return f"{int(seconds)} s"
    whole = int(seconds)
    for index, (name, size) in enumerate(_UNITS):
        if whole >= size:
            major, rest = divmod(whole, size)
            minor_name, minor_size = _UNITS[index + 1] if index + 1 < len(_UNITS) else ("s", 1)
            minor = rest // minor_size
            return f"{major} {name} {minor} {minor_name}" if minor else f"{major} {name}"
    return f"{whole} s"


def thousands(value: int | float | Decimal | None) -> str:
    """1234567 → '1,234,567'; floats keep up to two decimals; '–' when unknown."""
    if value is None or isinstance(value, bool):
        return "–"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{float(value):,.2f}".rstrip("0").rstrip(".")
