"""A large month for memory tests, made fast: K copies of a simulated month, ids renamed.

    .venv/bin/python benchmarks/replicate_month.py benchmarks/out/raw-200000 benchmarks/out/raw-x16 --copies 16

Simulating 3.2M sessions takes over an hour on the shared 2-core machine; copying the
200,000-session month 16 times takes a minute and gives the same number of rows, lines and
bytes (5.03M conversations, 8.4M lines, 15 GB in 31 day files). Copy ``k`` of each line has
its event and conversation ids renamed (``"e-`` -> ``"e<k>-``, ``"c-`` -> ``"c<k>-``), so
no copy's ids collide with another's and the planted duplicates stay duplicates within a
copy. Texts and users repeat across copies: figures of memory (rows, sizes, batches) carry
over to a real month of that size, figures of speed are optimistic (the month-wide language
and PII caches hit more often). Day files keep their names: each holds the K copies of
that day, one after another.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

MONTH = "2024-05"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="raw root holding MONTH/ and models.json")
    parser.add_argument("target", help="raw root to write")
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument("--month", default=MONTH)
    args = parser.parse_args()
    src, dst = Path(args.source), Path(args.target)
    (dst / args.month).mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "models.json", dst / "models.json")
    lines = 0
    for path in sorted((src / args.month).iterdir()):
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            data += b"\n"  # else a copy's first line would be glued to the last one before it
        lines += data.count(b"\n") * args.copies
        with open(dst / args.month / path.name, "wb") as out:
            for k in range(args.copies):
                out.write(data.replace(b'"e-', b'"e%x-' % k).replace(b'"c-', b'"c%x-' % k))
    print(
        f"{lines:,} lines in {len(list((dst / args.month).iterdir()))} files under {dst / args.month}"
    )


if __name__ == "__main__":
    main()
