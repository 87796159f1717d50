"""One exception type for API errors: a status, a machine-readable code and a sentence."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """Raise from any API view; the NinjaAPI handler renders {code, message, ...extra}."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.extra}
