"""Settings of a daphne subprocess serving tests/awp_site/log_urls.py (the product's settings otherwise)."""

from awp_site.settings import *  # noqa: F403

ROOT_URLCONF = "tests.awp_site.log_urls"
