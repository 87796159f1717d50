"""What masking costs: the pure redaction engine on realistic texts, with 0, 100 and 2,000 known secrets.

    python bench/redaction.py [--quick]

Prints, per case, the time per call (median of repeated calls) and the throughput in MB/s: a 100 KB HTML page
through the known-value net, a worker result through redact (keys, shapes, patterns, values), a daily log entry
through redact_text, and the ingest projector's test-then-walk over event payloads (secrets_in).
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from state.redaction import KnownSecrets, may_hold_secrets, redact, redact_text, secrets_in, sensitive_set  # noqa: E402

SENSITIVE = sensitive_set("api_key,apikey,password,passwd,secret,token,authorization,credentials,private_key".split(","))


def median_seconds(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return samples[len(samples) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeat = 10 if args.quick else 50
    rng = random.Random(7)
    words = ["worker", "fact", "42", "even", "digest", "iteration", "confidence", "summary", "blackboard", "status"]
    page = "".join(f"<tr><td>{i}</td><td>{' '.join(rng.choice(words) for _ in range(12))}</td></tr>\n" for i in range(1600))
    result = {"summary": "Logged in and collected 42 facts. " * 4, "findings": ["42 is even"] * 5, "confidence": 0.9,
              "notes": {"owner_password": "hunter2-xyz", "public": "fine"}, "build_log": "step1 ok\nclient_secret = cs-123456\nstep2 ok"}  # fmt: skip
    entry = "\n".join(f"- **{k}**: {v if isinstance(v, str) else repr(v)}" for k, v in result.items())
    payloads = [{"mean": 0.9, "per_worker": [{"name": f"worker_{i % 4}", "confidence": 0.9}], "msg": f"event {i}"} for i in range(2000)]
    payloads[::100] = [{"api_key": f"sk-{i:08d}-bench", "summary": "rotated"} for i in range(20)]
    print(f"# redaction benchmark · page {len(page) / 1000:.0f} KB · median of {repeat} calls")
    print("| case | known secrets | ms per call | MB/s |")
    print("|---|---:|---:|---:|")
    for count in (0, 100, 2000):
        secrets = ["".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(8, 40))) for _ in range(count)]
        plain, escaped = KnownSecrets.of(secrets), KnownSecrets.of(secrets, escaped=True)
        cases = [
            ("HTML page through the net (escaped forms)", lambda escaped=escaped: escaped.mask(page), len(page)),
            ("worker result through redact", lambda plain=plain: redact(result, SENSITIVE, plain), len(json.dumps(result))),
            ("daily-log entry through redact_text", lambda plain=plain: redact_text(entry, SENSITIVE, plain), len(entry)),
        ]
        for name, fn, size in cases:
            seconds = median_seconds(fn, repeat)
            print(f"| {name} | {count} | {seconds * 1000:.3f} | {size / seconds / 1e6:.1f} |")
    start = time.perf_counter()
    found = set()
    for payload in payloads:
        if may_hold_secrets(json.dumps(payload, ensure_ascii=False), SENSITIVE):
            found |= secrets_in(payload, SENSITIVE)
    per_event = (time.perf_counter() - start) / len(payloads)
    print(f"| ingest projector: test-then-walk per event (1% with secrets) | – | {per_event * 1000:.4f} | – |")
    assert len(found) == 20


if __name__ == "__main__":
    main()
