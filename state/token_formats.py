"""Self-identifying credential formats: a vendor's prefix and the shape of what follows it (pure data).

A token in one of these forms is a credential wherever it stands, labelled or not, even where the fail-closed pass
would let it through (under a "public key" label, say, or not switching kind often enough). Each entry is
(sign, body): the sign is the literal prefix the one-pass gate looks for (case-sensitive once found), the body a
regular expression of the whole token, sign included. `state.redaction` turns them into keyless patterns.

Kept as data so the set is easy to extend: add a vendor's format with its documented prefix and a body tight
enough that an identifier sharing the prefix (`hf_model`, `npm_config`) does not match. Publishable keys (Stripe
`pk_…`, PostHog `phc_…`) and ids that travel beside a secret (an AWS access key id is a separate rule) are not here.
"""

from __future__ import annotations

TOKEN_FORMATS: tuple[tuple[str, str], ...] = (
    ("AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),  # age identities
    ("glpat-", r"glpat-[A-Za-z0-9_\-]{20,}"),  # GitLab personal access tokens
    ("gldt-", r"gldt-[A-Za-z0-9_\-]{20,}"),  # GitLab deploy tokens
    ("glptt-", r"glptt-[A-Za-z0-9_\-]{20,}"),  # GitLab pipeline trigger tokens
    ("glrt-", r"glrt-[A-Za-z0-9_\-]{20,}"),  # GitLab runner tokens
    ("GR1348941", r"GR1348941[A-Za-z0-9_\-]{20,}"),  # GitLab runner registration tokens
    ("npm_", r"npm_[A-Za-z0-9]{36}"),  # npm access tokens
    ("pypi-", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),  # PyPI API tokens
    ("hf_", r"hf_[A-Za-z0-9]{30,}"),  # Hugging Face tokens
    ("SG.", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}"),  # SendGrid API keys
    ("xkeysib-", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),  # Brevo (Sendinblue) API keys
    ("dop_v1_", r"do[opr]_v1_[a-f0-9]{64}"),  # DigitalOcean tokens
    ("doo_v1_", r"do[opr]_v1_[a-f0-9]{64}"),
    ("dor_v1_", r"do[opr]_v1_[a-f0-9]{64}"),
    ("shpat_", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),  # Shopify tokens and shared secrets
    ("shpss_", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("shpca_", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("shppa_", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("sq0atp-", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}"),  # Square tokens and application secrets
    ("sq0csp-", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}"),
    ("lin_api_", r"lin_api_[A-Za-z0-9]{32,}"),  # Linear API keys
    ("ntn_", r"ntn_[A-Za-z0-9]{40,}"),  # Notion integration tokens
    ("ya29.", r"ya29\.[A-Za-z0-9_\-]{20,}"),  # Google OAuth access tokens
    ("GOCSPX-", r"GOCSPX-[A-Za-z0-9_\-]{20,}"),  # Google OAuth client secrets
    ("ATATT3", r"ATATT3[A-Za-z0-9_\-=]{30,}"),  # Atlassian API tokens
    ("ATBB", r"ATBB[A-Za-z0-9]{28,}"),  # Bitbucket app passwords
    ("dckr_pat_", r"dckr_pat_[A-Za-z0-9_\-]{20,}"),  # Docker Hub access tokens
    ("CFPAT-", r"CFPAT-[A-Za-z0-9_\-]{40,}"),  # Contentful personal access tokens
    ("pscale_tkn_", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{30,}"),  # PlanetScale tokens and passwords
    ("pscale_pw_", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{30,}"),
    ("sntrys_", r"sntrys_[A-Za-z0-9+/=_\-]{40,}"),  # Sentry organisation tokens
    ("sntryu_", r"sntryu_[a-f0-9]{64}"),  # Sentry user tokens
    ("glsa_", r"glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8}"),  # Grafana service account tokens
    ("glc_", r"glc_[A-Za-z0-9+/=]{32,}"),  # Grafana Cloud tokens
    ("dapi", r"dapi[a-f0-9]{32}(?:-\d)?"),  # Databricks tokens
    ("hvs.", r"hv[sb]\.[A-Za-z0-9_\-]{24,}"),  # HashiCorp Vault tokens
    ("hvb.", r"hv[sb]\.[A-Za-z0-9_\-]{24,}"),
    ("tskey-", r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}"),  # Tailscale keys
    ("nfp_", r"nfp_[A-Za-z0-9]{36,}"),  # Netlify personal access tokens
    ("rnd_", r"rnd_[A-Za-z0-9]{28,}"),  # Render API keys
    ("fm2_", r"fm2_[A-Za-z0-9+/=_\-]{40,}"),  # Fly.io macaroon tokens
    ("whsec_", r"whsec_[A-Za-z0-9+/=]{24,}"),  # Stripe / Svix webhook signing secrets
    ("gsk_", r"gsk_[A-Za-z0-9]{40,}"),  # Groq API keys
    ("xai-", r"xai-[A-Za-z0-9]{40,}"),  # xAI API keys
    ("pplx-", r"pplx-[A-Za-z0-9]{40,}"),  # Perplexity API keys
    ("r8_", r"r8_[A-Za-z0-9]{37,}"),  # Replicate API tokens
    ("xapp-", r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}"),  # Slack app-level tokens
    ("hooks.slack.com/services/", r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),  # Slack webhooks
    ("discord.com/api/webhooks/", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}"),  # Discord webhooks
    ("EAAG", r"EAA[A-Za-z0-9]{100,}"),  # Facebook / Meta access tokens
    ("EAAB", r"EAA[A-Za-z0-9]{100,}"),
    # A private key's PEM block in base64 (Kubernetes secret data): "-----BEGIN [RSA |EC |DSA |OPENSSH |ENCRYPTED ]PRIVATE KEY".
    ("LS0tLS1CRUdJTi", r"LS0tLS1CRUdJTiB(?:SU0EgUFJJVkFURSBLRV|QUklWQVRFIEtFW|PUEVOU1NIIFBSSVZBVEUgS0VZ|FQyBQUklWQVRFIEtFW"
     r"|FTkNSWVBURUQgUFJJVkFURSBLRV|EU0EgUFJJVkFURSBLRV)[A-Za-z0-9+/]{40,}={0,2}"),
    # NATS NKEY seeds: `S`, the key's type (user, account, operator), then `A` (the seed prefix's low bits), 55 base32.
    ("SUA", r"S[UAO]A[A-Z2-7]{55}"),
    ("SAA", r"S[UAO]A[A-Z2-7]{55}"),
    ("SOA", r"S[UAO]A[A-Z2-7]{55}"),
    ("sbp_", r"sbp_(?:v0_)?[a-f0-9]{40}"),  # Supabase personal access tokens (round 15)
    ("PuTTY-User-Key-File", r"PuTTY-User-Key-File-\d: [\s\S]{0,400}?Private-Lines: \d+\r?\n[A-Za-z0-9+/=\r\n]{40,}"),
)
