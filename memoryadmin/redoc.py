"""Our copy of Redoc for /api/docs/: drf-spectacular-sidecar's bundle minus its one CDN request.

Redoc's standalone bundle always renders an "API docs by Redocly" footer whose logo loads from
https://cdn.redoc.ly; no option turns it off. `python -m memoryadmin.redoc` (`make redoc`)
copies the installed sidecar's bundle into `static/memoryadmin/redoc/` without that image, so
the docs page makes no third-party request. Run it again after upgrading drf-spectacular-sidecar.
"""

from __future__ import annotations

import re
import shutil
from importlib.metadata import version
from pathlib import Path

import drf_spectacular_sidecar

SIDECAR_DIR = Path(drf_spectacular_sidecar.__file__).parent / "static/drf_spectacular_sidecar/redoc"
TARGET_DIR = Path(__file__).resolve().parent.parent / "static/memoryadmin/redoc"
BUNDLE = "redoc.standalone.js"
STATIC_PATH = f"memoryadmin/redoc/{BUNDLE}"
# The footer logo: `<h>.createElement("img",{alt:"redocly logo",onError:…,src:"https://cdn…"})`.
LOGO = re.compile(
    r'\w+\.createElement\("img",\{alt:"redocly logo",onError:[^{}]*?,'
    r'src:"https://cdn\.redoc\.ly/[^"]*"\}\)'
)
# Manifest storage would rewrite (and require) the source map, which we do not ship.
SOURCE_MAP = re.compile(r"^//# sourceMappingURL=.*$\n?", re.MULTILINE)
# What a bundle must not contain once vendored: anything the browser would fetch from elsewhere.
REMOTE_LOAD = re.compile(r'(?:src|href):"https?://[^"]*\.(?:svg|png|css|js|woff2?)"|cdn\.redoc\.ly')


class RedocPatchError(Exception):
    """The sidecar's bundle no longer looks as expected: update LOGO before vendoring it."""


def bundle_without_cdn(source: str, *, sidecar_version: str) -> str:
    """The bundle with the footer logo element replaced by `null` and no source map comment."""
    patched, count = LOGO.subn("null", source)
    if count != 1:
        raise RedocPatchError(f"expected one Redocly logo element in the bundle, found {count}")
    patched = SOURCE_MAP.sub("", patched)
    if REMOTE_LOAD.search(patched):
        raise RedocPatchError("the bundle still loads something from another host")
    header = (
        f"/* Redoc from drf-spectacular-sidecar {sidecar_version}, vendored by memoryadmin/redoc.py"
        " without its CDN-hosted footer logo. */\n"
    )
    return header + patched


def vendor(target_dir: Path = TARGET_DIR) -> Path:
    """Write the patched bundle and its licence notices into target_dir; return the bundle."""
    source = (SIDECAR_DIR / "bundles" / BUNDLE).read_text(encoding="utf-8")
    patched = bundle_without_cdn(source, sidecar_version=version("drf-spectacular-sidecar"))
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / BUNDLE
    target.write_text(patched, encoding="utf-8")
    shutil.copyfile(
        SIDECAR_DIR / "bundles" / f"{BUNDLE}.LICENSE.txt", target_dir / f"{BUNDLE}.LICENSE.txt"
    )
    return target


if __name__ == "__main__":
    print(vendor())
