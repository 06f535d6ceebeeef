"""What a month of ``raw_logs`` was built from: the manifest kept beside the partition.

``<lake>/raw_logs/_manifests/<YYYY-MM>.json`` lists every raw file that the month's
``raw_logs`` and ``raw_rejects`` were parsed from: its name under the raw root (as
``raw_logs.source_file`` holds it), its size, its version (ETag or modification time, as
the raw-root sensor lists it), its content hash, and its lines read, accepted and rejected.
Two readers need it:

- the shrink guard (``shrink.py``): a new build of a month is compared with the files and
  lines that the lake's month came from, before anything is replaced;
- the raw-root sensor (``watch.py``): a month whose files differ from its manifest is
  ingested again, whatever the sensor's own cursor has seen.

Written after both partitions, atomically (a temporary name, then a rename), and nothing in
it depends on when or by whom it was written, so a rerun over the same files writes the
same bytes. A crash between the partitions and the manifest leaves the previous manifest:
the sensor then sees files that differ from it and asks for the month again, and the rerun
writes it. The reverse order would be worse: a manifest naming files that the partition was
not built from would hide a change from the sensor. A manifest may lag its partition, never
lead it.

The folder starts with ``_``: the catalog views, retention and forget read
``<asset>/*.parquet`` only. A manifest holds no user data (names, sizes, hashes, counts), so
retention, which deletes old months of ``raw_logs``, leaves it: the sensor still knows what
such a month was built from and does not ingest it again.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from arena_assets.ingest.sources import MonthListing, open_root, relative_name
from arena_assets.ingest.watch import RawFile, month_fingerprint
from arena_assets.storage import Lake

MANIFEST_VERSION = 1
MANIFEST_ASSET = "raw_logs"
MANIFEST_FOLDER = "_manifests"
# The content hash: SHA-256 over the bytes as stored (a gzipped file hashed compressed, 3-10x
# fewer bytes than it decompresses to), in one streaming pass (hashlib.file_digest: a
# buffer at a time, constant memory). SHA-256 runs on the CPU's SHA instructions, about
# 1 GB per CPU-second, 30-40x faster than ingest parses: on a 20,000-session month the
# hash is 2.9 % of the ingest step's CPU for plain JSONL and 0.4 % gzipped
# (benchmarks/bench_source_hash.py), so a multi-GB month hashes in seconds against minutes
# of parsing. A separate pass rather than a tee of the parser's reads: Parquet is read by
# range (footer first), and the hash then depends on no reader. The size comes free with
# the listing and already tells most changes (an append, a truncation). Files are hashed
# before they are parsed: a file that changes in between shows as changed on the next look
# and is ingested again, never the reverse.
HASH_NAME = "sha256"


class ManifestError(ValueError):
    """A manifest that cannot be read as one (one line naming the file)."""


@dataclass(frozen=True)
class SourceFile:
    """One raw file of a month as it was ingested."""

    name: str  # under the raw root, e.g. "2024-02/events-2024-02-01.jsonl"
    size: int
    version: str  # ETag on S3, else the modification time (what the sensor compares)
    sha256: str
    lines: int = 0  # lines (records) read
    accepted: int = 0
    rejected: int = 0

    def raw_file(self) -> RawFile:
        return RawFile(self.name, self.size, self.version)


@dataclass
class Manifest:
    month: str
    raw_root: str  # the root as read (absolute for a local folder)
    files: list[SourceFile] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def accepted(self) -> int:
        return sum(f.accepted for f in self.files)

    @property
    def rejected(self) -> int:
        return sum(f.rejected for f in self.files)

    def fingerprint(self) -> str:
        """Equal to the sensor's fingerprint of the month iff its files are the same."""
        return month_fingerprint([f.raw_file() for f in self.files])

    def to_json(self) -> bytes:
        body = {
            "version": MANIFEST_VERSION,
            "month": self.month,
            "raw_root": self.raw_root,
            "hash": HASH_NAME,
            "totals": {
                "files": len(self.files),
                "bytes": self.bytes,
                "lines": self.lines,
                "accepted": self.accepted,
                "rejected": self.rejected,
            },
            "fingerprint": self.fingerprint(),
            "files": [asdict(f) for f in sorted(self.files, key=lambda f: f.name)],
        }
        return (json.dumps(body, indent=1, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        try:
            body = json.loads(data)
            if body.get("version") != MANIFEST_VERSION:
                raise ValueError(f"version {body.get('version')!r}, expected {MANIFEST_VERSION}")
            files = [SourceFile(**entry) for entry in body["files"]]
            return cls(str(body["month"]), str(body["raw_root"]), files)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ManifestError(f"{where} is not a raw_logs manifest: {exc}") from None


def hash_files(
    listing: MonthListing, storage_options: dict | None = None, threads: int = 1
) -> dict[str, str]:
    """{url: SHA-256 hex digest} of every file of the listing, ``threads`` at a time
    (hashlib releases the GIL while it hashes, and an object store's reads wait on the
    network)."""
    fs, _root = open_root(listing.root, storage_options)

    def digest(url: str) -> str:
        with fs.open(url, "rb") as fh:
            return hashlib.file_digest(fh, HASH_NAME).hexdigest()

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        return dict(zip(listing.files, pool.map(digest, listing.files), strict=True))


def build_manifest(
    month: str,
    raw_root: str,
    listing: MonthListing,
    hashes: dict[str, str],
    per_file: dict[str, list[int]],
    storage_options: dict | None = None,
) -> Manifest:
    """The manifest of a month from its listing, its files' hashes and the parse's counts
    per file (``{name: [lines read, accepted, rejected]}``; a file that gave no line has
    none)."""
    files = []
    for url in listing.files:
        name = relative_name(raw_root, url, storage_options)
        size, version = listing.stats.get(url, (0, ""))
        lines, accepted, rejected = per_file.get(name, (0, 0, 0))
        files.append(SourceFile(name, size, version, hashes[url], lines, accepted, rejected))
    return Manifest(month, listing.root, files)


def manifest_path(lake: Lake, month: str, asset: str = MANIFEST_ASSET) -> str:
    """The manifest's path on ``lake.fs`` (no protocol); ``asset``: the table built from
    the files (``completion_battles`` keeps one too)."""
    return f"{lake.folder(asset)}/{MANIFEST_FOLDER}/{month}.json"


def manifest_url(lake: Lake, month: str, asset: str = MANIFEST_ASSET) -> str:
    return f"{lake.root}/{asset}/{MANIFEST_FOLDER}/{month}.json"


def write_manifest(lake: Lake, manifest: Manifest, asset: str = MANIFEST_ASSET) -> str:
    """Replace the month's manifest (temporary name, then rename, through the lake: refused
    when the writer's run has ended, an I/O failure in one line); returns its URL."""
    return lake.write_file(
        f"{asset}/{MANIFEST_FOLDER}/{manifest.month}.json",
        manifest.to_json(),
        what=f"{asset} {manifest.month} manifest",
    )


def read_manifest(lake: Lake, month: str, asset: str = MANIFEST_ASSET) -> Manifest | None:
    """The month's manifest; None when it has none (a month built before manifests were
    kept, or never built). ``ManifestError`` when the file is not one."""
    try:
        with lake.fs.open(manifest_path(lake, month, asset), "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    where = manifest_url(lake, month, asset)
    manifest = Manifest.from_json(data, where)
    if manifest.month != month:
        raise ManifestError(f"{where} describes {manifest.month}, not {month}")
    return manifest


def built_fingerprints(lake: Lake, months: list[str]) -> tuple[dict[str, str], list[str]]:
    """({month: fingerprint of the files it was built from}, [unreadable manifests, each
    one line]) for those of ``months`` that have a manifest: what the sensor compares the
    raw root with. One listing of the folder, then one read per month that has one."""
    folder = f"{lake.folder(MANIFEST_ASSET)}/{MANIFEST_FOLDER}"
    lake.fs.invalidate_cache(folder)
    try:
        present = {p.rsplit("/", 1)[-1] for p in lake.fs.ls(folder, detail=False)}
    except FileNotFoundError:
        return {}, []
    found, unreadable = {}, []
    for month in months:
        if f"{month}.json" not in present:
            continue
        try:
            manifest = read_manifest(lake, month)
        except ManifestError as exc:
            unreadable.append(str(exc))
            continue
        if manifest is not None:
            found[month] = manifest.fingerprint()
    return found, unreadable
