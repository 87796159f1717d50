from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Same algorithm name as Django's, few iterations: fast in tests, still verifiable by a child server."""

    iterations = 1000
