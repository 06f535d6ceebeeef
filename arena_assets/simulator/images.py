"""What the simulated arena accepts as an image part, as a real vision endpoint would.

An ``image_url`` part must be a data URL of an image (``data:image/<type>;base64,...``
whose bytes start like a PNG, JPEG, GIF or WebP file), an http(s) URL (accepted unread:
the simulator never goes out), or ``sha256:<64 hex>``, the lake's reference, which only the
simulated arena resolves (it reads labels from its truth, not from pixels). Anything else
is a 400, as a real endpoint answers it. Each accepted image is named for the tests
(``("data", sha256 of the bytes)`` or ``("sha256", hex)``) so they can check what arrived.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

_HEX = re.compile(r"[0-9a-f]{64}")
_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"RIFF")


def image_urls(messages: list[dict]) -> list[str]:
    """The ``image_url`` URLs of every message's content parts, in order."""
    out = []
    for m in messages:
        content = m.get("content")
        for p in content if isinstance(content, list) else ():
            if isinstance(p, dict) and p.get("type") == "image_url":
                url = p.get("image_url")
                out.append(url.get("url", "") if isinstance(url, dict) else str(url or ""))
    return out


def image_name(url: str) -> tuple[str, str] | None:
    """("data" | "sha256", digest) of an accepted image URL, None for an http(s) URL;
    ValueError saying what is wrong otherwise."""
    if url.startswith("sha256:"):
        if not _HEX.fullmatch(url[7:]):
            raise ValueError(
                f"image_url {url[:80]!r}: a sha256: reference needs 64 lower-case hex digits"
            )
        return "sha256", url[7:]
    if url.startswith(("http://", "https://")):
        return None
    header, sep, data = url.partition(",")
    if not (header.startswith("data:image/") and header.endswith(";base64") and sep):
        raise ValueError(
            f"image_url {url[:40]!r}...: not a data:image/...;base64 URL, an http(s) URL "
            "or a sha256: reference"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ValueError("image_url: the data URL's base64 does not decode") from None
    if not raw.startswith(_SIGNATURES):
        raise ValueError(
            "image_url: the data URL holds bytes that are not an image (PNG, JPEG, GIF, WebP)"
        )
    return "data", hashlib.sha256(raw).hexdigest()
