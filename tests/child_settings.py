"""Settings of the servers and commands a test starts: the product's, with the tests' fast password hasher.

A child server verifying a test user's hash (tests/hashers.py: Django's algorithm, 1,000 iterations) found it
below Django's 1,000,000 and re-hashed it at 1,000,000 on every login through the form, about a second of CPU
per browser login, and every later login of that user paid the full count again.
"""

from awp_site.settings import *  # noqa: F403

PASSWORD_HASHERS = ["tests.hashers.FastPBKDF2PasswordHasher"]
