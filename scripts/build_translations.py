"""Collect the app's strings into one .ts per language and compile the .qm the app loads.

    python scripts/build_translations.py           # update kvsim.json, kvsim_pt_BR.ts and kvsim_pt_BR.qm
    python scripts/build_translations.py --check   # exit 1 if the project, the .ts or the .qm is stale, or a message untranslated

Qt's convention: one ``.ts`` per language (``resources/translations/kvsim_pt_BR.ts``), opened whole in Qt
Linguist, made by ``pyside6-lupdate`` from a project file that lists every source
(``resources/translations/kvsim.json``; its paths are relative to the repository root, so a translator
can also run ``pyside6-lupdate -project resources/translations/kvsim.json`` from there). The sources are
every module of the app (``translate("context", "text")``) and of the engine (``QT_TRANSLATE_NOOP(...)``:
the cache policies' words, marked without importing Qt). ``lupdate`` keeps the translations already
written and drops the strings that left the code (``-no-obsolete``); ``pyside6-lrelease`` compiles the
.ts into the .qm. The words the translation uses for each concept are in ``glossary.json`` beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "resources" / "translations"
PROJECT = OUT / "kvsim.json"
PARTS = ("kvsim", "ui")  # the folders whose modules hold strings
LANGS = ("pt_BR",)


def ts_path(lang: str) -> Path:
    return OUT / f"kvsim_{lang}.ts"


def qm_path(lang: str) -> Path:
    return OUT / f"kvsim_{lang}.qm"


def sources() -> list[str]:
    """Every module of the engine and the app, relative to the root (a symlinked folder not followed twice)."""
    found = []
    for part in PARTS:
        base = ROOT / part
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(ROOT)
            if path.resolve().is_relative_to(base.resolve()) and not any((ROOT / p).is_symlink() for p in rel.parents):
                found.append(rel.as_posix())
    return sorted(found)


def project_text() -> str:
    """The lupdate project description (JSON) for the current sources."""
    project = {
        "projectFile": PROJECT.relative_to(ROOT).as_posix(),
        "sources": sources(),
        "translations": [ts_path(lang).relative_to(ROOT).as_posix() for lang in LANGS],
    }
    return json.dumps(project, indent=1) + "\n"


def tool(name: str) -> str:
    beside = Path(sys.executable).parent / f"pyside6-{name}"  # a virtual environment not on PATH
    exe = str(beside) if beside.is_file() else shutil.which(f"pyside6-{name}")
    if exe is None:
        sys.exit(f"error: pyside6-{name} not found (it comes with PySide6)")
    return exe


def update(project: Path, ts: Path, lang: str) -> None:
    """Refresh ``ts`` from the sources ``project`` lists (lupdate resolves them from the root)."""
    options = ["-silent", "-no-obsolete", "-locations", "none", "-target-language", lang]
    proc = subprocess.run(
        [tool("lupdate"), *options, "-project", str(project), "-ts", str(ts)], cwd=ROOT, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"error: pyside6-lupdate failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")


def release(ts: Path, qm: Path) -> None:
    """Compile ``ts`` into ``qm`` beside it, then rename it into place: a running app maps its .qm file, and one
    rewritten in place under it lost its translations mid-run (a Portuguese lesson turned English)."""
    part = qm.with_name(qm.name + ".part")
    subprocess.run([tool("lrelease"), "-silent", str(ts), "-qm", str(part)], check=True)
    if not part.is_file() or part.stat().st_size == 0:
        sys.exit(f"error: pyside6-lrelease wrote no {qm.name}")
    os.replace(part, qm)


def messages(ts: Path) -> list[tuple[str, str, ET.Element | None]]:
    """(context, source, translation element) of every message of ``ts``."""
    out = []
    for context in ET.parse(ts).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            out.append((name, message.findtext("source") or "", message.find("translation")))
    return out


def unfinished(ts: Path) -> list[str]:
    """'[context] source' for every message without a finished translation."""
    missing = []
    for context, source, tr in messages(ts):
        if tr is None or tr.get("type") in ("unfinished", "obsolete", "vanished") or not "".join(tr.itertext()).strip():
            missing.append(f"[{context}] {source!r}")
    return missing


def build(lang: str, project_json: str, tmp: Path) -> tuple[Path, Path]:
    """The shipped .ts of ``lang`` refreshed from the sources, and its .qm, both written in ``tmp``."""
    project = tmp / PROJECT.name
    project.write_text(project_json, encoding="utf-8")
    work = tmp / ts_path(lang).name
    if ts_path(lang).is_file():
        shutil.copyfile(ts_path(lang), work)
    update(project, work, lang)
    built = tmp / qm_path(lang).name
    release(work, built)
    return work, built


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when anything is out of date")
    args = ap.parse_args()
    text = project_text()
    status = 0
    if args.check and (not PROJECT.is_file() or PROJECT.read_text(encoding="utf-8") != text):
        print(f"out of date: {PROJECT.name}: a source was added or removed (run scripts/build_translations.py)")
        status = 1
    elif not args.check:
        PROJECT.write_text(text, encoding="utf-8")
    for lang in LANGS:
        ts, qm = ts_path(lang), qm_path(lang)
        with tempfile.TemporaryDirectory() as tmp:
            work, built = build(lang, text, Path(tmp))
            missing, count, stale = unfinished(work), len(messages(work)), []
            if args.check:
                stale = [p.name for p, new in ((ts, work), (qm, built)) if not p.is_file() or p.read_bytes() != new.read_bytes()]
            else:
                shutil.copyfile(work, ts)
                shutil.copyfile(built, qm)
        for name in stale:
            print(f"{lang}: out of date: {name} (run scripts/build_translations.py)")
        for line in missing:
            print(f"{lang}: untranslated: {line}")
        status |= bool(stale or (missing and args.check))
        wrote = "" if args.check else f", wrote {ts.name} and {qm.name}"
        print(f"{lang}: {count} messages, {len(missing)} untranslated{wrote}")
    return status


if __name__ == "__main__":
    sys.exit(main())
