"""Images for the labeller: a data URL of the stored image, or its reference.

The lake keeps images by their sha256 (``messages[].images``), not their pixels. With an
image root (``ARENA_IMAGE_ROOT``: a folder or ``s3://`` prefix holding ``<sha256>.<ext>``,
as the platform stores uploads) the labeller gets the image itself as a data URL, which
every vision endpoint accepts; without one it gets the reference ``sha256:<hex>``, which
only an endpoint that can resolve it (the simulated arena) understands.
"""

from __future__ import annotations

import base64
from functools import lru_cache

import fsspec

_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
          "gif": "image/gif"}


@lru_cache(maxsize=4096)
def image_url(sha256: str, image_root: str = "") -> str:
    if not image_root.strip():
        return f"sha256:{sha256}"
    fs, base = fsspec.core.url_to_fs(image_root.rstrip("/"))
    for ext, mime in _TYPES.items():
        path = f"{base}/{sha256}.{ext}"
        if fs.exists(path):
            return f"data:{mime};base64,{base64.b64encode(fs.cat_file(path)).decode()}"
    raise FileNotFoundError(f"ARENA_IMAGE_ROOT={image_root}: no image {sha256}.(png|jpg|jpeg|webp|gif)")
