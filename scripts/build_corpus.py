#!/usr/bin/env python3
"""Rebuild the training corpus of the bundled `tiny` model, byte for byte, from Debian packages.

English — the Debian package ``r-cran-janeaustenr`` (version 1.0.0-1, MIT-licensed R data package by
Julia Silge) which carries the complete text of Jane Austen's six novels (public domain, originally
from Project Gutenberg).  The novels are stored inside the package as an R lazy-load database
(``data/Rdata.rdb``): a sequence of zlib-compressed, XDR-serialized R character vectors, one line per
element.  This script reads that format directly (no R needed), joins lines into paragraphs, drops
titles/chapter headings, strips the ``_italic_`` markup.

Portuguese — three Debian packages of freely licensed Portuguese prose (see PORTUGUESE below):
``fortunes-br`` (GPL-2+: jokes, anecdotes, dialogues and quotations in Brazilian Portuguese),
``focalinux-text`` (GFDL 1.2: the "Foca GNU/Linux" guide, pt-BR) and ``debian-reference-pt-br``
(GPL-2+: the Debian Reference in Portuguese).  Only prose paragraphs are kept (no tables, command
lines, code or lists of options; see ``is_prose``).

Writes (one document after another, paragraphs separated by a blank line, documents separated by a
line holding only <|endoftext|>):

    resources/corpus/austen.txt.xz      the six novels
    resources/corpus/portugues.txt.xz   fortunes, then the three Foca volumes, then the Debian Reference

Usage:
    python scripts/build_corpus.py                  # runs `apt-get download PACKAGE=VERSION` for each package
    python scripts/build_corpus.py --deb-dir DIR    # use the .deb files already in DIR (downloads the rest)
    python scripts/build_corpus.py --deb FILE.deb   # the janeaustenr .deb (kept for the old command line)
"""

from __future__ import annotations

import argparse
import gzip
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
OUT_PT = ROOT / "resources" / "corpus" / "portugues.txt.xz"
OUT_WORDS = ROOT / "resources" / "corpus" / "palavras.txt.xz"
# Debian's Brazilian Portuguese word list (GPL-2, br.ispell by Ricardo Ueda Karpischek): the tests'
# judge of "is this a Portuguese word"; only its words that also occur in the Portuguese corpus are kept.
WORDLIST = ("wbrazilian", "3.0~beta4-24", "c4ba29c560b7155c0e9041dfea98546dd088685268854186b84a43e555f70eab")
WORDLIST_PATH = "./usr/share/dict/brazilian"

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


def download_deb(dest: Path, package: str = PACKAGE, version: str = VERSION) -> Path:
    subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=dest, check=True)
    return dest / f"{package}_{version.replace(':', '%3a')}_all.deb"


def fetch_deb(package: str, version: str, sha256: str, deb_dir: Path | None, tmp: Path) -> bytes:
    """The .deb's bytes: from deb_dir when it holds the file, else `apt-get download` into tmp."""
    name = f"{package}_{version}_all.deb"
    path = deb_dir / name if deb_dir and (deb_dir / name).is_file() else download_deb(tmp, package, version)
    deb = path.read_bytes()
    digest = hashlib.sha256(deb).hexdigest()
    if digest != sha256:
        print(f"warning: {path} sha256 {digest} != expected {sha256}", file=sys.stderr)
    return deb


def read_deb_member(deb: bytes, wanted: str) -> bytes:
    """Return one file from a .deb (an `ar` archive holding data.tar.*), without dpkg."""
    return read_deb_members(deb, [wanted])[wanted]


def read_deb_members(deb: bytes, wanted: list[str]) -> dict[str, bytes]:
    """Return several files from a .deb, by their path inside data.tar.* ("./usr/...")."""
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
                return {w: tar.extractfile(w).read() for w in wanted}
    raise FileNotFoundError(wanted[0])


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


# --- Portuguese ------------------------------------------------------------------------------------
# package: (version, sha256 of the .deb, {path inside the package: source encoding}), in corpus order.
FOCA = "./usr/share/doc/focalinux/text/{}/index.txt.gz"
PORTUGUESE = {
    "fortunes-br": (
        "20220821",
        "0a181b5fdf4f9d83dd519c4a50af2e68d88c85d27ab32f665c72e5fc67331a4c",
        {"./usr/share/games/fortunes/brasil": "utf-8"},
    ),
    "focalinux-text": (
        "2010-09-3.1",
        "21e42b7112aec61f255cdafbeb441a50526c98e167fc0d33d74939d191db92dc",
        {FOCA.format(level): "latin-1" for level in ("iniciante", "intermediario", "avancado")},
    ),
    "debian-reference-pt-br": (
        "2.100",
        "da2d405b1c9af9177d620e6ff478bb987bcf2ac906d884aa87faad3f25874116",
        {"./usr/share/debian-reference/debian-reference.pt-br.txt.gz": "utf-8"},
    ),
}
# Frequent Portuguese function words: a prose paragraph has many of them, a list of options or a
# command line has few. (Not a dictionary: the evaluation's word list is kept apart from the data.)
PT_FUNCTION_WORDS = set(
    "a o as os de da do das dos que e é em no na nos nas um uma para por com não se ao à como mais mas "
    "ou seu sua ser são está foi pelo pela este esta isso isto ele ela eu você já também quando muito".split()
)
WORD = re.compile(r"^[(\"“'«]*[A-Za-zÀ-ÖØ-öø-ÿ]+(?:-[A-Za-zÀ-ÖØ-öø-ÿ]+)*[)\"”'»]*[.,;:!?…)]*$")


def is_prose(para: str, min_words: int) -> bool:
    """Running text: enough words, mostly plain words (not paths, options, numbers), many function words."""
    words = para.split()
    if len(words) < min_words or re.search(r"[|{}<>=\\$#@_]|\+-|--|\.\.\.\.", para):
        return False
    plain = sum(bool(WORD.match(w)) for w in words) / len(words)
    function = sum(w.strip(".,;:!?()\"“”«»'").lower() in PT_FUNCTION_WORDS for w in words) / len(words)
    return plain >= 0.85 and function >= 0.2 and para[-1] in '.!?:…"”»)'


def clean_paragraph(lines: list[str]) -> str:
    para = " ".join(line.strip() for line in lines)
    para = para.replace("\u00a0", " ").replace("`", "").replace("_", "")
    para = re.sub(r"^[*•]\s+", "", para)  # a bullet item is a sentence of its own
    para = re.sub(r"(\w)' ", r"\1 ", para)  # `word' quoting of the text renderers
    return re.sub(r"\s+", " ", para).strip()


def blocks(text: str) -> list[list[str]]:
    """Blank-line separated blocks; inside a block a bullet ('* ') or a dialogue dash starts a new one."""
    out: list[list[str]] = []
    for block in re.split(r"\n\s*\n", text):
        current: list[str] = []
        for line in block.split("\n"):
            if re.match(r"^\s*([*•]|- |– |— )", line) and current:
                out.append(current)
                current = []
            if line.strip():
                current.append(line)
        if current:
            out.append(current)
    return out


def doc_paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a documentation text (Foca GNU/Linux, Debian Reference)."""
    keep = []
    for block in blocks(text):
        if any("|" in line or re.match(r"^\s*[-=+]{4,}\s*$", line) for line in block):
            continue  # tables and heading underlines
        para = clean_paragraph(block)
        if is_prose(para, min_words=8):
            keep.append(para)
    return keep


def fortune_paragraphs(text: str) -> list[str]:
    """Each fortune is a short text (a joke, an anecdote, a dialogue, a quotation); attributions dropped."""
    keep = []
    for fortune in re.split(r"\n%\n", text):
        body = "\n".join(line for line in fortune.split("\n") if not line.strip().startswith("--"))
        paras = [clean_paragraph(block) for block in blocks(body)]
        paras = [p for p in paras if p]
        if paras and all(is_prose(p, min_words=1) or len(p.split()) < 8 for p in paras):
            words = " ".join(paras).split()
            if len(words) >= 6 and sum(bool(WORD.match(w)) for w in words) / len(words) >= 0.85:
                keep.append("\n\n".join(paras))
    return keep


def build_portuguese(debs: dict[str, bytes]) -> list[str]:
    docs = []
    for package, (_, _, members) in PORTUGUESE.items():
        files = read_deb_members(debs[package], list(members))
        for member, encoding in members.items():
            raw = files[member]
            text = (gzip.decompress(raw) if member.endswith(".gz") else raw).decode(encoding)
            text = text.replace("\r\n", "\n")
            paras = fortune_paragraphs(text) if package == "fortunes-br" else doc_paragraphs(text)
            print(f"{package:24s} {member.split('/')[-2]:14s} {len(paras):6d} paragraphs {sum(map(len, paras)):9d} chars")
            docs.append("\n\n".join(paras))
    return docs


def write_xz(out: Path, docs: list[str]) -> None:
    text = ("\n\n" + EOT + "\n\n").join(docs) + "\n"
    data = text.encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    print(
        f"wrote {out}: {len(data)} bytes of text, {out.stat().st_size} bytes compressed, "
        f"sha256(text)={hashlib.sha256(data).hexdigest()}"
    )


def build_austen(deb: bytes) -> list[str]:
    books = read_rdb_character_vectors(read_deb_member(deb, RDB_PATH))
    # Fixed order (by title) so the corpus does not depend on the order inside the archive.
    cleaned = sorted(clean_book(b) for b in books)
    parts = []
    for title, paragraphs in cleaned:
        print(f"{title:25s} {len(paragraphs):6d} paragraphs {sum(map(len, paragraphs)):9d} chars")
        parts.append("\n\n".join(paragraphs))
    return parts


def build_wordlist(deb: bytes, portuguese_docs: list[str]) -> bytes:
    """Lower-cased words of wbrazilian that occur in the Portuguese corpus, one per line, sorted."""
    words = {w.lower() for w in read_deb_member(deb, WORDLIST_PATH).decode("utf-8").split()}
    seen = {w.lower() for doc in portuguese_docs for w in re.findall(r"[A-Za-zÀ-ÖØ-öø-ÿ]+(?:-[A-Za-zÀ-ÖØ-öø-ÿ]+)*", doc)}
    return ("\n".join(sorted(words & seen)) + "\n").encode("utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deb", type=Path, help="the r-cran-janeaustenr .deb, instead of running apt-get download")
    ap.add_argument("--deb-dir", type=Path, help="take PACKAGE_VERSION_all.deb files from this folder when there")
    ap.add_argument("--out", type=Path, default=OUT, help="the English corpus file")
    ap.add_argument("--out-pt", type=Path, default=OUT_PT, help="the Portuguese corpus file")
    ap.add_argument("--out-words", type=Path, default=OUT_WORDS, help="the Portuguese word list for the tests")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        if args.deb:
            deb = args.deb.read_bytes()
            if hashlib.sha256(deb).hexdigest() != DEB_SHA256:
                print(f"warning: {args.deb} sha256 differs from {DEB_SHA256}", file=sys.stderr)
        else:
            deb = fetch_deb(PACKAGE, VERSION, DEB_SHA256, args.deb_dir, Path(tmp))
        write_xz(args.out, build_austen(deb))
        pt_debs = {pkg: fetch_deb(pkg, ver, sha, args.deb_dir, Path(tmp)) for pkg, (ver, sha, _) in PORTUGUESE.items()}
        words_deb = fetch_deb(*WORDLIST, args.deb_dir, Path(tmp))
    portuguese = build_portuguese(pt_debs)
    write_xz(args.out_pt, portuguese)
    words = build_wordlist(words_deb, portuguese)
    args.out_words.write_bytes(lzma.compress(words, preset=9 | lzma.PRESET_EXTREME))
    n_words = len(words.splitlines())
    print(f"wrote {args.out_words}: {n_words} words, {args.out_words.stat().st_size} bytes compressed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
