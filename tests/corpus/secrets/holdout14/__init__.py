"""HOLDOUT14: a fourteenth blind part of the secret corpus (see `generate`)."""
