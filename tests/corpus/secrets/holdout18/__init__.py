"""HOLDOUT18: an eighteenth blind part of the secret corpus, written without reading the detector."""
