"""Push AWP run events to an AWP Memory & State server and call its memory API. Standard library only."""

from awp_memory_client.client import ApiError, IngestClient, IngestError, MemoryClient, MemoryError

__all__ = ["ApiError", "IngestClient", "IngestError", "MemoryClient", "MemoryError"]
__version__ = "0.1.0"
