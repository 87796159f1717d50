"""Memory models: filled by the memory capability."""
