"""HOLDOUT17: a seventeenth blind part of the secret corpus."""
