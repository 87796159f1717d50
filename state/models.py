"""State models: filled by the state capability."""
