"""Settings of a daphne subprocess serving tests/awp_site/log_urls.py (the tests' child settings otherwise)."""

from tests.child_settings import *  # noqa: F403

ROOT_URLCONF = "tests.awp_site.log_urls"
