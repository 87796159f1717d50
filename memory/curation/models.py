"""Curation models: proposals, evidence, votes, promoted facts (filled by the curation capability)."""
