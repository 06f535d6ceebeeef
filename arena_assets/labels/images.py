"""Images for the labeller: a data URL of the stored image, or its reference.

The lake keeps images by their sha256 (``messages[].images``), not their pixels. A
labelling request holds the reference ``sha256:<hex>`` (its cache key: the same image, the
same key, wherever it is stored). With an image root (``ARENA_IMAGE_ROOT``: a folder or
``s3://`` prefix holding ``<sha256>.<ext>``, as the platform stores uploads) the reference
is replaced by the image itself as a data URL, which every vision endpoint accepts, just
before that request is sent (``resolve_images``, an ``LLMRequest.prepare``): a batch holds
at most one image per call in flight, never the month's images at once. Without a root
the reference is sent as it is, which only an endpoint that can resolve it (the simulated
arena) understands; ``reference_reader`` says whether this endpoint is one.
"""

from __future__ import annotations

import base64

import fsspec

REF = "sha256:"
_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "webp": "image/webp",
    "gif": "image/gif",
}


def image_ref(sha256: str) -> str:
    return f"{REF}{sha256}"


def image_url(sha256: str, image_root: str) -> str:
    """The image ``<root>/<sha256>.<ext>`` as a data URL; FileNotFoundError (naming the
    image and the root) when no such file is there."""
    fs, base = fsspec.core.url_to_fs(image_root.rstrip("/"))
    for ext, mime in _TYPES.items():
        path = f"{base}/{sha256}.{ext}"
        if fs.exists(path):
            return f"data:{mime};base64,{base64.b64encode(fs.cat_file(path)).decode()}"
    raise FileNotFoundError(
        f"no image {sha256}.(png|jpg|jpeg|webp|gif) under ARENA_IMAGE_ROOT={image_root}"
    )


def resolve_images(messages: list[dict], image_root: str) -> list[dict]:
    """``messages`` with every ``sha256:`` image reference replaced by its data URL (a copy;
    the input, the cache key's material, is left as it is)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for p in content:
                url = (
                    (p.get("image_url") or {}).get("url", "")
                    if p.get("type") == "image_url"
                    else ""
                )
                if url.startswith(REF):
                    p = {
                        **p,
                        "image_url": {
                            **p["image_url"],
                            "url": image_url(url[len(REF) :], image_root),
                        },
                    }
                parts.append(p)
            m = {**m, "content": parts}
        out.append(m)
    return out


SIMULATED_OWNER = "simulated-arena"  # /v1/models' owned_by of the simulated arena's own models


def reference_reader(task) -> bool:
    """Whether ``task``'s endpoint reads ``sha256:`` references itself: the simulated arena,
    whose model list names the labeller as owned by ``simulated-arena``. An endpoint that
    does not answer the list counts as one: the batch's preflight then says what is wrong
    with it."""
    from arena_assets.llm.client import list_models, make_client

    try:
        models = list_models(make_client(task, max_retries=0, timeout=min(task.timeout, 15.0)))
    except Exception:
        return True
    return any(m["id"] == task.model and m.get("owned_by") == SIMULATED_OWNER for m in models)
