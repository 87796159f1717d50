"""The push client now lives in its own distribution, `awp-memory-client` (clients/python/), with no Django.

This module keeps the old import path working for callers inside the server's repository:

    from awp_site.client import IngestClient
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from awp_memory_client import ApiError, IngestClient, IngestError, MemoryClient, MemoryError
except ImportError:  # a server venv made before the client was split out: use the copy in this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python" / "src"))
    from awp_memory_client import ApiError, IngestClient, IngestError, MemoryClient, MemoryError

__all__ = ["ApiError", "IngestClient", "IngestError", "MemoryClient", "MemoryError"]
