"""HOLDOUT15: a fifteenth blind part of the secret corpus (see `generate`)."""
