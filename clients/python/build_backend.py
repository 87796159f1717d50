"""A PEP 517 build backend in 80 lines of standard library, so `pip install clients/python` needs no index.

The package is pure Python with no dependencies; a build backend from PyPI (setuptools + wheel, flit_core)
would be the only thing to download, which fails offline and in a fresh virtualenv. This one writes the wheel
(and the editable wheel: a .pth pointing at src/) with zipfile.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NAME, VERSION = PROJECT["name"], PROJECT["version"]
DIST = NAME.replace("-", "_")
PACKAGE = ROOT / "src" / DIST
TAG = "py3-none-any"


def _metadata() -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {VERSION}", f"Summary: {PROJECT['description']}",
             f"Requires-Python: {PROJECT['requires-python']}", "Description-Content-Type: text/markdown"]  # fmt: skip
    return "\n".join(lines) + "\n\n" + (ROOT / "README.md").read_text()


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: dict[str, bytes]) -> str:
    info = f"{DIST}-{VERSION}.dist-info"
    files = {**files, f"{info}/METADATA": _metadata().encode(),
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: build_backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()}  # fmt: skip
    record = "\n".join(_record_line(n, d) for n, d in files.items()) + f"\n{info}/RECORD,,\n"
    filename = f"{DIST}-{VERSION}-{TAG}.whl"
    with zipfile.ZipFile(Path(directory) / filename, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", record)
    return filename


def build_wheel(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    files = {f"{DIST}/{p.relative_to(PACKAGE).as_posix()}": p.read_bytes() for p in sorted(PACKAGE.rglob("*.py"))}
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    return _write_wheel(wheel_directory, {f"__editable__.{DIST}.pth": (str(ROOT / "src") + "\n").encode()})


def build_sdist(sdist_directory: str, config_settings: dict | None = None) -> str:
    import tarfile

    base = f"{DIST}-{VERSION}"
    filename = f"{base}.tar.gz"
    with tarfile.open(Path(sdist_directory) / filename, "w:gz") as sdist:
        for path in [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "build_backend.py", *sorted(PACKAGE.rglob("*.py"))]:
            sdist.add(path, arcname=f"{base}/{path.relative_to(ROOT).as_posix()}")
    return filename


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    return []


get_requires_for_build_editable = get_requires_for_build_sdist = get_requires_for_build_wheel
