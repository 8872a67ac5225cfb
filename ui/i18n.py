"""Languages: every visible string goes through Qt's translators, every number through the locale.

Strings are written in English in the code as ``translate("context", "text")`` (the context names
the module, so ``pyside6-lupdate`` files each one under it; the engine marks its own words, e.g. the
cache policies', with a Qt-free ``QT_TRANSLATE_NOOP``). ``scripts/build_translations.py`` runs
``pyside6-lupdate`` over the project file ``resources/translations/kvsim.json`` (every source) into
one file per language, ``kvsim_pt_BR.ts`` (translated there, in the words of ``glossary.json``
beside it), and compiles it into ``kvsim_pt_BR.qm``, which ships in the wheel and is loaded here.

Numbers, all in one place here: ``num(1.5, 1)`` is "1.5" in English and "1,5" in Portuguese;
``local(text)`` writes the engine's formatted figures ("1.23 M", "56.2 KB", "6e-06") the locale's way
("1,23 M", "56,2 KB", "6×10⁻⁶"); ``fmt(value, spec)`` and ``fill(template, **values)`` format through it.

The language: ``--lang`` on the command line, else the choice remembered in the settings (☰ →
Language), else the system's locale (Portuguese → pt_BR), else English.
"""

from __future__ import annotations

import html
import re
import string
from importlib import resources
from typing import Any

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QSettings, QTranslator

LANGUAGES = {"en": "English", "pt_BR": "Português (Brasil)"}
DEFAULT = "en"
SETTING = "language"

translate = QCoreApplication.translate  # the name pyside6-lupdate looks for: translate("context", "text")

_state: dict[str, Any] = {"lang": DEFAULT, "translators": []}
# until a language is installed, numbers read as in English (the C locale would drop the grouping)
QLocale.setDefault(QLocale(QLocale.Language.English, QLocale.Country.UnitedStates))


# Qt 6 renamed a few of its own strings and its shipped Portuguese catalogue (qtbase_pt_BR.qm) has only
# the old forms: the file dialogs said "Look in:" and "Files of type:" in a Portuguese app
QT_GAPS = {
    "pt_BR": {
        ("QFileDialog", "&Look in:"): "&Procurar em:",
        ("QFileDialog", "Files of &type:"): "Arquivos do &tipo:",
    }
}


class GapTranslator(QTranslator):
    """Answers only the (context, text) pairs it is given; every other string goes on to Qt's catalogue."""

    def __init__(self, table: dict[tuple[str, str], str], parent=None) -> None:
        super().__init__(parent)
        self.table = table

    def translate(self, context, source_text, disambiguation=None, n=-1):  # noqa: D102 - Qt API
        return self.table.get((context, source_text))  # None: a null string, so Qt asks the next translator

    def isEmpty(self) -> bool:  # noqa: N802 - Qt API
        return False


class LanguageError(ValueError):
    """A language kvsim has no translation for."""


def normalize(lang: str | None) -> str | None:
    """``"pt"``, ``"pt-BR"``, ``"pt_BR.UTF-8"`` → ``"pt_BR"``; ``"en_US"`` → ``"en"``; ``None`` → ``None``."""
    if lang is None or not str(lang).strip():
        return None
    text = str(lang).strip().split(".")[0].replace("-", "_").lower()
    if text.startswith("pt"):
        return "pt_BR"
    if text.startswith("en") or text in ("c", "posix"):
        return "en"
    raise LanguageError(f"no translation for {lang!r} (available: {', '.join(LANGUAGES)})")


def choose(requested: str | None = None, settings: QSettings | None = None) -> str:
    """The language to use: ``requested`` (``--lang``), else the remembered choice, else the system's."""
    if requested is not None:
        return normalize(requested) or DEFAULT
    if settings is not None:
        try:
            remembered = normalize(settings.value(SETTING))
        except LanguageError:
            remembered = None  # a settings file from another version: fall back to the system's
        if remembered is not None:
            return remembered
    return "pt_BR" if QLocale.system().name().lower().startswith("pt") else DEFAULT


def install(app: QCoreApplication, lang: str) -> str:
    """Load ``lang``'s translators into ``app`` (Qt's own dialogs too) and make its locale the default."""
    lang = normalize(lang) or DEFAULT
    for old in _state["translators"]:
        app.removeTranslator(old)
    loaded: list[QTranslator] = []
    if lang != "en":
        ours = QTranslator(app)
        qm = resources.files("kvsim.resources").joinpath(f"translations/kvsim_{lang}.qm")
        if not qm.is_file() or not ours.load(str(qm)):
            raise LanguageError(f"the {LANGUAGES[lang]} translation is missing (run scripts/build_translations.py)")
        app.installTranslator(ours)
        loaded.append(ours)
        qt = QTranslator(app)
        if qt.load(f"qtbase_{lang}", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
            app.installTranslator(qt)
            loaded.append(qt)
        if lang in QT_GAPS:
            gaps = GapTranslator(QT_GAPS[lang], app)  # what Qt's own catalogue lacks (asked first, answers only these)
            app.installTranslator(gaps)
            loaded.append(gaps)
    _state["translators"] = loaded
    _state["lang"] = lang
    english = QLocale(QLocale.Language.English, QLocale.Country.UnitedStates)
    QLocale.setDefault(QLocale(QLocale.Language.Portuguese, QLocale.Country.Brazil) if lang == "pt_BR" else english)
    return lang


def language() -> str:
    """The language in use: "en" or "pt_BR"."""
    return str(_state["lang"])


def is_portuguese() -> bool:
    return _state["lang"] == "pt_BR"


def num(value: float, decimals: int = 1) -> str:
    """A number with ``decimals`` digits in the locale's format (1.5 / 1,5; thousands grouped)."""
    return QLocale().toString(float(value), "f", decimals)


def integer(value: int) -> str:
    """A whole number with the locale's grouping (12,345 / 12.345)."""
    return QLocale().toString(int(value))


_NUMBER = re.compile(r"\d[\d,]*\.\d+|\d{1,3}(?:,\d{3})+")
# a number in e-notation after the separators were localized ("6e-06", "2,3e-07"); not inside a word or a hash
_EXPONENT = re.compile(r"(?<![\w.,])(\d+(?:,\d+)?)e([+-]?)(\d+)(?![\w])")
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _power_of_ten(m: re.Match) -> str:
    """``6e-06`` → ``6×10⁻⁶`` (a zero exponent: the mantissa alone)."""
    exponent = int(m.group(3))
    if exponent == 0:
        return m.group(1)
    power = (("-" if m.group(2) == "-" else "") + str(exponent)).translate(_SUPERSCRIPT)
    return f"{m.group(1)}×10{power}"


def local(text: str) -> str:
    """``text`` with its numbers written the locale's way: in Portuguese the decimal comma and the
    thousands dot ("1.23 M" → "1,23 M", "12,345" → "12.345") and powers of ten as one writes them
    ("|Δ| ≤ 6e-06" → "|Δ| ≤ 6×10⁻⁶"); in English, ``text`` as it is. Every number the app shows goes
    through here (``fmt``, ``fill``, ``num``, ``integer``); the engine's JSON and command-line output does not."""
    if not is_portuguese():
        return text
    text = _NUMBER.sub(lambda m: m.group(0).replace(",", "\0").replace(".", ",").replace("\0", "."), text)
    return _EXPONENT.sub(_power_of_ten, text)


def fmt(value: Any, spec: str = "") -> str:
    """``value`` formatted with the Python format ``spec`` (".1f", ".0e", ",", ".3g"), in the locale's way."""
    return local(format(value, spec))


class LocalFormatter(string.Formatter):
    """``str.format`` with each field written in the locale's way; named placeholders only (a template
    read from a file or a translation cannot reach into a value's attributes)."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if not field_name.isidentifier():
            raise KeyError(field_name)
        return super().get_field(field_name, args, kwargs)

    def format_field(self, value: Any, format_spec: str) -> str:
        return local(super().format_field(value, format_spec))


_FORMATTER = LocalFormatter()


def fill(template: str, **values: Any) -> str:
    """``template.format(**values)`` with the numbers in the locale's way: ``fill(translate(c, "TTFT {ms:.1f} ms"), ms=12.25)``
    is "TTFT 12.2 ms" in English and "TTFT 12,2 ms" in Portuguese."""
    return _FORMATTER.format(template, **values)


def plain_tip(text: str) -> str:
    """A tooltip that shows ``text`` as it is. Qt renders a tooltip as rich text when its first line looks like
    markup (``Qt.mightBeRichText``), so a prompt, a token, a lane's name or a path read from a file holding
    ``<b>x</b>`` or ``<img src=…>`` would be formatted, not shown: such a text goes out escaped in a paragraph that
    keeps its line breaks and spaces; any other as it is (Qt shows it as plain text)."""
    from PySide6.QtGui import Qt

    if not Qt.mightBeRichText(text):
        return text
    return "<p style='white-space:pre-wrap'>" + html.escape(text, quote=False) + "</p>"
