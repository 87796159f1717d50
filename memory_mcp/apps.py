from django.apps import AppConfig


class MemoryMcpConfig(AppConfig):
    """The Model Context Protocol adapter onto the memory services (streamable HTTP at /mcp/, and stdio)."""

    name = "memory_mcp"
    verbose_name = "Memory over MCP"
