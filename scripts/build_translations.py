"""Collect the app's strings into the .ts sources and compile the .qm the app loads.

    python scripts/build_translations.py           # update resources/translations/pt_BR/*.ts, build kvsim_pt_BR.qm
    python scripts/build_translations.py --check   # exit 1 if a .ts is stale, a message untranslated or the .qm old

One .ts file per ui module (``lanes.view.ts`` for ``ui/lanes/view.py``), so translating one module
never touches another's file. ``pyside6-lupdate`` keeps the translations already written and drops
the strings that left the code (``-no-obsolete``); ``pyside6-lrelease`` merges every .ts into one .qm.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "ui"
OUT = ROOT / "resources" / "translations"
LANGS = ("pt_BR",)


def modules() -> list[tuple[str, Path]]:
    """(name, file) of every ui module with a translate(...) call."""
    found = []
    for path in sorted(UI.rglob("*.py")):
        if path.name != "i18n.py" and "translate(" in path.read_text(encoding="utf-8"):
            found.append((".".join(path.relative_to(UI).with_suffix("").parts), path))
    return found


def tool(name: str) -> str:
    beside = Path(sys.executable).parent / f"pyside6-{name}"  # a virtual environment not on PATH
    exe = str(beside) if beside.is_file() else shutil.which(f"pyside6-{name}")
    if exe is None:
        sys.exit(f"error: pyside6-{name} not found (it comes with PySide6)")
    return exe


def update(ts_dir: Path, lang: str, only: list[str] | None = None) -> list[Path]:
    """Refresh the .ts of every module (``only``: of these modules, the other .ts files untouched); all .ts files."""
    ts_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, path in modules():
        ts = ts_dir / f"{name}.ts"
        if only and name not in only:
            if ts.is_file():
                written.append(ts)
            continue
        options = ["-silent", "-no-obsolete", "-locations", "none", "-target-language", lang]
        subprocess.run([tool("lupdate"), *options, str(path), "-ts", str(ts)], check=True)
        written.append(ts)
    keep = {p.name for p in written}
    for stale in [] if only else ts_dir.glob("*.ts"):  # a module that no longer has strings (or no longer exists)
        if stale.name not in keep:
            stale.unlink()
    return written


def release(ts_files: list[Path], qm: Path) -> None:
    subprocess.run([tool("lrelease"), "-silent", *map(str, ts_files), "-qm", str(qm)], check=True)


def unfinished(ts_files: list[Path]) -> list[str]:
    """'file: source' for every message without a finished translation."""
    missing = []
    for ts in ts_files:
        for message in ET.parse(ts).getroot().iter("message"):
            tr = message.find("translation")
            if tr is None or tr.get("type") in ("unfinished", "obsolete", "vanished") or not "".join(tr.itertext()).strip():
                missing.append(f"{ts.name}: {message.findtext('source')!r}")
    return missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when anything is out of date")
    ap.add_argument("--only", nargs="+", metavar="MODULE", help="refresh only these modules' .ts (e.g. window views.lanes)")
    args = ap.parse_args()
    status = 0
    for lang in LANGS:
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / lang
                if (OUT / lang).is_dir():
                    shutil.copytree(OUT / lang, copy)
                files = update(copy, lang)
                shipped = {f.name: OUT / lang / f.name for f in files}
                stale = [n for n, p in shipped.items() if not p.is_file() or p.read_bytes() != (copy / n).read_bytes()]
                release(files, Path(tmp) / "check.qm")
                qm = OUT / f"kvsim_{lang}.qm"
                if not qm.is_file() or qm.read_bytes() != (Path(tmp) / "check.qm").read_bytes():
                    stale.append(qm.name)
                missing = unfinished(files)
        else:
            files = update(OUT / lang, lang, args.only)
            release(files, OUT / f"kvsim_{lang}.qm")
            stale, missing = [], unfinished(files)
        for name in stale:
            print(f"{lang}: out of date: {name} (run scripts/build_translations.py)")
        for line in missing:
            print(f"{lang}: untranslated: {line}")
        status |= bool(stale or (missing and args.check))
        print(f"{lang}: {len(files)} modules, {len(missing)} untranslated" + ("" if args.check else f", wrote kvsim_{lang}.qm"))
    return status


if __name__ == "__main__":
    sys.exit(main())
