#!/usr/bin/env python3
"""Rebuild the training corpus of the bundled `tiny` model, byte for byte.

Source: the Debian package ``r-cran-janeaustenr`` (version 1.0.0-1, MIT-licensed R data package by
Julia Silge) which carries the complete text of Jane Austen's six novels (public domain, originally
from Project Gutenberg).  The novels are stored inside the package as an R lazy-load database
(``data/Rdata.rdb``): a sequence of zlib-compressed, XDR-serialized R character vectors, one line per
element.  This script reads that format directly (no R needed), joins lines into paragraphs, drops
titles/chapter headings, strips the ``_italic_`` markup and writes:

    resources/corpus/austen.txt.xz      one novel after another, paragraphs separated by a blank line,
                                        novels separated by a line holding only <|endoftext|>

Usage:
    python scripts/build_corpus.py                  # runs `apt-get download r-cran-janeaustenr=1.0.0-1`
    python scripts/build_corpus.py --deb FILE.deb   # use an already downloaded .deb
"""

from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import re
import struct
import subprocess
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path

PACKAGE = "r-cran-janeaustenr"
VERSION = "1.0.0-1"
DEB_SHA256 = "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"
RDB_PATH = "./usr/lib/R/site-library/janeaustenr/data/Rdata.rdb"
EOT = "<|endoftext|>"

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "resources" / "corpus" / "austen.txt.xz"

# Lines that are titles, bylines, dates or section headings, not prose.
HEADING = re.compile(
    r"^(chapter|volume|book)\s+[0-9ivxlc]+\.?$"
    r"|^(by\s*)?jane austen.*$"
    r"|^by$"
    r"|^\(\d{4}\)$"
    r"|^(finis|the end)\.?$"
    r"|^advertisement by the authoress.*$",
    re.IGNORECASE,
)


def download_deb(dest: Path) -> Path:
    subprocess.run(["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=dest, check=True)
    return dest / f"{PACKAGE}_{VERSION}_all.deb"


def read_deb_member(deb: bytes, wanted: str) -> bytes:
    """Return one file from a .deb (an `ar` archive holding data.tar.*), without dpkg."""
    assert deb[:8] == b"!<arch>\n", "not a .deb"
    pos = 8
    while pos < len(deb):
        header = deb[pos : pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = deb[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
                return tar.extractfile(wanted).read()
    raise FileNotFoundError(wanted)


def read_rdb_character_vectors(rdb: bytes) -> list[list[str]]:
    """Each object of the lazy-load DB: 4-byte length + zlib stream of an R XDR serialization.

    The janeaustenr objects are plain character vectors (STRSXP of CHARSXP), which is all we parse.
    """
    books, pos = [], 0
    while pos < len(rdb):
        z = zlib.decompressobj()
        raw = z.decompress(rdb[pos + 4 :])
        pos = len(rdb) - len(z.unused_data)
        assert raw[:2] == b"X\n", "expected XDR serialization"
        p = 2
        version = struct.unpack(">i", raw[p : p + 4])[0]
        p += 12  # format version, writer R version, minimal reader R version
        if version == 3:
            n_enc = struct.unpack(">i", raw[p : p + 4])[0]
            p += 4 + n_enc  # native encoding name
        flags, n = struct.unpack(">iI", raw[p : p + 8])
        p += 8
        assert flags & 0xFF == 16, "expected a character vector (STRSXP)"
        lines = []
        for _ in range(n):
            cflags, length = struct.unpack(">ii", raw[p : p + 8])
            p += 8
            assert cflags & 0xFF == 9, "expected CHARSXP"
            lines.append(raw[p : p + length].decode("utf-8") if length >= 0 else "")
            p += max(length, 0)
        assert p == len(raw)
        books.append(lines)
    return books


def clean_book(lines: list[str]) -> tuple[str, list[str]]:
    title = lines[0].strip()
    paragraphs, current = [], []
    for line in lines[1:] + [""]:
        line = line.strip()
        if line:
            current.append(line)
            continue
        if current:
            paragraphs.append(" ".join(current))
            current = []
    out = []
    for para in paragraphs:
        para = para.replace("_", "")
        para = re.sub(r"\s+", " ", para).strip()
        if not para or HEADING.match(para) or not re.search(r"[a-z]", para):
            continue
        out.append(para)
    return title, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deb", type=Path, help="use this .deb instead of running apt-get download")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        deb_path = args.deb or download_deb(Path(tmp))
        deb = deb_path.read_bytes()
    digest = hashlib.sha256(deb).hexdigest()
    if digest != DEB_SHA256:
        print(f"warning: {deb_path} sha256 {digest} != expected {DEB_SHA256}", file=sys.stderr)

    books = read_rdb_character_vectors(read_deb_member(deb, RDB_PATH))
    # Fixed order (by title) so the corpus does not depend on the order inside the archive.
    cleaned = sorted(clean_book(b) for b in books)
    parts = []
    for title, paragraphs in cleaned:
        print(f"{title:25s} {len(paragraphs):6d} paragraphs {sum(map(len, paragraphs)):9d} chars")
        parts.append("\n\n".join(paragraphs))
    text = ("\n\n" + EOT + "\n\n").join(parts) + "\n"
    data = text.encode("utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    print(
        f"wrote {args.out}: {len(data)} bytes of text, {args.out.stat().st_size} bytes compressed, "
        f"sha256(text)={hashlib.sha256(data).hexdigest()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
