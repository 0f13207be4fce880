"""Facts written the way a language writes them: one table of patterns per language.

The combined pattern of ``factpatterns`` reads the formats every language shares (URLs,
ISO dates, "1,234.56", ids). What a language writes its own way is here, a table per
language (``LANGUAGE_FACTS``: kind, weight, pattern): German amounts ("12.380,50 €",
"1.234.567", "4,8 t"), dates ("14.03.2027", "30. April 2027") and street addresses
("Musterstraße 12, 10115 Berlin"); English dates ("March 18, 2027") and addresses ("221B
Baker Street, London NW1 6XE"); Chinese amounts ("3万5千元", "1.2亿"), dates ("2027年3月15日"),
addresses ("北京市朝阳区建国路88号") and names ("对接人是王芳"); and, for all, IBAN (checked
by its checksum), BIC, amounts with a currency sign or code, and phone numbers (found by
Google's ``phonenumbers``, which knows every country's numbering plan). A language is
added by adding its table.

A scan (``locale_facts``) returns each fact with its place, so that the combined pattern's
matches inside one ("12.380" of "12.380,50 €") are left out (``factscan``).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from dataclasses import dataclass

import phonenumbers

from .patterntext import (
    by_first_character,
    each_led,
    leading_words,
    word_group,
)

_DE_MONTHS = (
    "Januar|Februar|März|Maerz|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember"
)
_EN_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
# 1.234.567 / 12.380,50 / 4,8 / 19, after the first digit.
_DE_DIGITS_REST = r"\d{0,2}(?:\.\d{3})+(?:,\d+)?|\d*,\d+|\d*"
_DE_UNITS = (
    r"€|EUR|Euro|CHF|%|t|kg|km|m²|qm|Stück|Stk\.?|Paletten?|Kartons?|Kisten?|Monate?|Wochen?"
    r"|Tage?|Jahre?|Stunden?|Minuten?|Zimmer|Personen|Plätze|Arbeitsplätze|Besucher|Mitarbeiter"
)
_CURRENCY_CODES = r"EUR|USD|GBP|CHF|CNY|RMB|JPY|RUB"
# What a row needs in a text to be tried at all (a substring search costs next to
# nothing; a pattern, a pass over the text).
_SIGNS = ("€", "$", "£", "¥", "￥", "₽")
_CODES = tuple(_CURRENCY_CODES.split("|"))


def _amount(groups: str) -> tuple[str, str]:
    """An amount in any notation, with ``groups`` (a character class's inside) between
    groups of three: 12,000 / 12.380,50 / 2’450.00 / 3 400 / 184 500,00 / 980 / 8,750.00;
    and the same after its first digit (for patterns that check the start of a number
    there)."""
    return (
        rf"\d{{1,3}}(?:[{groups}]\d{{3}})+(?:[.,]\d{{1,2}})?(?!\d)|\d+(?:[.,]\d{{1,2}})?(?![\d.,]\d)",
        rf"\d{{0,2}}(?:[{groups}]\d{{3}})+(?:[.,]\d{{1,2}})?(?!\d)|\d*(?:[.,]\d{{1,2}})?(?![\d.,]\d)",
    )


_HAN = r"[\u4e00-\u9fff]"
_CJK_NUMERALS = "亿万千百"
# The Chinese surnames that most people bear: a name is one of them and one or two more
# characters, said after a word that introduces a person.
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕"
    "丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃"
    "武戴莫孔向汤"
)
_NAME_WORDS = (
    "Die|Der|Das|Den|Dem|Des|Ein|Eine|Einen|Unser|Unsere|Wir|Ich|Sie|Er|Es|Bitte|Hier|Neue|Neuer"
    "|Korrektur|Update|The|A|An|Our|We|It|This|That|Please|Here|New|Correction|For|On|In|At|Im|Am"
    # French and Spanish words that start a sentence or a street, Russian likewise.
    "|Le|La|Les|Un|Une|Nous|Notre|Nos|Votre|Vous|Merci|Bonjour|Pour|Pas|Correction|Rue|Avenue"
    "|Place|El|Los|Las|Una|Nuestro|Nuestra|Por|Para|Gracias|Hola|Calle|Avenida|Paseo|Plaza"
    "|Corrección|Это|Мы|Наш|Наша|Наше|Ваш|Ваша|Пожалуйста|Адрес|Счёт|Счет|Заявка|Менеджер"
    "|Спасибо|Здравствуйте|Поправка|Контакт|Теперь|Встреча|Оплата|Доставка|Договор"
)


# A digit that starts a number (no letter, digit, "." or "," right before it).
_NUMBER_START = r"\d(?<![\w.,]\d)"


@dataclass(frozen=True, slots=True)
class Digits:
    """What a row's every match holds around a run of digits: a run whose first digit
    ``before`` accepts (tried just after that digit: look-behinds, look-aheads) and that
    ``after`` follows (tried right after the whole run). A scan finds such runs for all
    rows in one pass and runs the rows only over the lines holding one
    (docs/architecture.md, "The fact check"): most lines hold digits, few a run of
    digits a fact can be made of."""

    before: str = ""
    after: str = ""


_EN_MONTH_ENDS = "|".join(sorted({month[-3:] for month in _EN_MONTHS.split("|")}))

# (kind, weight, pattern[, what a text must hold for it to be tried]) per language; "all"
# applies to every text. Where a pattern has a
# group "v", the fact is that group (the rest is context, like the word before a name).
_TABLES: dict[str, list[tuple]] = {
    "de": [
        ("date", 4, r"\d(?<![\d.]\d)\d?\.\d{1,2}\.(?:\d{4}|\d{2})(?!\.?\d)"),
        (
            "date",
            4,
            _NUMBER_START + r"\d?\. ?(?:" + _DE_MONTHS + r")(?: \d{4})?\b",
            Digits(after=r"\. ?(?:" + _DE_MONTHS + ")"),
        ),
        (
            "date",
            3,
            word_group("Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag") + r"\b",
            ("tag", "woch"),
        ),
        (
            "address",
            5,
            r"[A-ZÄÖÜ](?<!\w[A-ZÄÖÜ])[\wäöüß-]*(?:straße|strasse|str\.|weg|platz|allee|gasse"
            r"|ring|damm|ufer) \d+ ?[a-z]?\b(?:, \d{5} [A-ZÄÖÜ][\wäöüß-]+)?",
            Digits(before=r"(?<=(?:ße|se|r\.|eg|tz|ee|ng|mm|er) \d)"),
        ),
        # German notation with a unit: "1.234.567", "4,8 t", "2.500 Stück", "8,5 %".
        (
            "number",
            3,
            _NUMBER_START + r"(?:" + _DE_DIGITS_REST + r") ?(?:" + _DE_UNITS + r")(?![\w²])",
            # The unit follows the number, its decimals or a group of three.
            Digits(
                before=r"(?<![\w.,]\d)|(?<=,\d)|(?<=\d\.\d)(?=\d\d(?!\d))",
                after=r" ?(?:" + _DE_UNITS + r")(?![\w²])",
            ),
        ),
        (
            "number",
            3,
            _NUMBER_START + r"\d{0,2}(?:\.\d{3}){2,}(?![\w.,]\d)",
            Digits(before=r"(?<![\w.,]\d)", after=r"(?:\.\d{3}){2,}(?![\w.,]\d)"),
        ),
        (
            "name",
            3,
            word_group(r"Dr\.|Prof\.|Herr|Frau") + r" [A-ZÄÖÜ][a-zäöüß]+"
            r"(?: [A-ZÄÖÜ][a-zäöüß]+(?:-[A-ZÄÖÜ][a-zäöüß]+)?)?",
        ),
    ],
    "en": [
        (
            "date",
            4,
            word_group(_EN_MONTHS) + r"\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b",
            Digits(before=rf"(?<=(?:{_EN_MONTH_ENDS}) \d)|(?<=(?:{_EN_MONTH_ENDS})\. \d)"),
        ),
        (
            "date",
            4,
            _NUMBER_START + r"\d?(?:st|nd|rd|th)? (?:" + _EN_MONTHS + r")\.?,? \d{4}\b",
            Digits(after=each_led(("st ", "nd ", "rd ", "th ", " "), "(?:" + _EN_MONTHS + ")")),
        ),
        (
            "date",
            4,
            _NUMBER_START + r"\d{3}/\d{1,2}/\d{1,2}\b",
            Digits(after=r"/(?<=\d{4}/)\d"),
        ),
        (
            "date",
            3,
            word_group("Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday") + r"\b",
            ("day",),
        ),
        (
            "address",
            5,
            _NUMBER_START + r"\d*[A-Z]? (?:[A-Z][a-z]+ ){1,3}(?:Street|St\.|Road|Rd\.|Avenue"
            r"|Ave\.|Lane|Way|Drive|Boulevard|Square|Place)(?:, [A-Z][a-z]+"
            r"(?: [A-Z]{1,2}\d[A-Z\d]? \d[A-Z]{2}| [A-Z]{2} \d{5})?)?",
            Digits(
                after=each_led(
                    ("[A-Z] ", " "),
                    r"(?:[A-Z][a-z]+ ){1,3}(?:Street|St\.|Road|Rd\.|Avenue|Ave\.|Lane|Way|Drive"
                    r"|Boulevard|Square|Place)",
                )
            ),
        ),
        ("name", 3, word_group(r"Dr\.|Prof\.|Mr\.|Mrs\.|Ms\.") + r" [A-Z][a-z]+(?: [A-Z][a-z]+)?"),
        # Two capitalised words, the first not one that starts a sentence ("Lena Hoffmann",
        # "Amelia Novak"), in English and German (those words: ``NAME_WORDS``).
        (
            "name",
            2,
            r"[A-ZÄÖÜ](?<![\w.-][A-ZÄÖÜ])[a-zäöüß]+ [A-ZÄÖÜ][a-zäöüß]{2,}"
            r"(?:-[A-ZÄÖÜ][a-zäöüß]+)?\b",
        ),
    ],
    "zh": [
        ("amount", 5, r"\d(?<!\d\d)\d*(?:\.\d+)?[亿万千百]+(?:\d+[亿万千百]+)*(?:元|块|人民币)?"),
        ("date", 4, r"\d(?<!\d\d)\d{3}年\d{1,2}月(?:\d{1,2}[日号])?"),
        ("date", 4, r"\d(?<!\d\d)\d?月\d{1,2}[日号]"),
        ("date", 3, r"(?:星期|周|礼拜)[一二三四五六日天]"),
        (
            "time",
            3,
            r"(?:上午|下午|晚上|中午|早上)[零一二三四五六七八九十\d]{1,3}点(?:半|\d{1,2}分)?",
        ),
        (
            "address",
            5,
            r"[在到于是为址：:，,。、\s（(](?P<v>(?![在到于是为])(?:"
            + _HAN
            + r"{2,4}(?:省|自治区))?"
            + _HAN
            + r"{2,4}市"
            r"(?:" + _HAN + r"{1,4}(?:区|县))?" + _HAN + r"{1,8}?(?:路|街|大道|道|巷|弄)\d+号)",
        ),
        # Chinese writes a quantity's unit right after it, and the number right after a
        # word ("限重120公斤"), where the combined pattern sees no word boundary.
        (
            "number",
            3,
            r"\d(?<![\d.A-Za-z]\d)\d*(?:\.\d+)?(?:万元|元|块|个|件|台|箱|公斤|千克|克|吨|平方米|米"
            r"|公里|天|小时|分钟|秒|人|次|层|楼|号门|号楼|栋|间|套|张|家|%)",
        ),
        (
            "name",
            3,
            r"[是叫由找请和为：:\s](?P<v>[" + _SURNAMES + r"]" + _HAN + r"{1,2})"
            r"(?=[。，,、的\s]|$)",
        ),
    ],
}


@functools.cache
def _cldr() -> dict[str, str]:
    """What Unicode's CLDR (through Babel) says each language writes: month names as a
    date writes them (French "décembre", Spanish "diciembre", Russian "декабря", the
    genitive), weekday names, and the characters that separate groups of three digits
    (a narrow no-break space in French, a no-break space in Russian, an apostrophe in
    Swiss German), each as a regex alternation or class. Read once, when first needed."""
    from babel.dates import get_day_names, get_month_names
    from babel.numbers import get_currency_symbol, get_group_symbol

    def alternation(names: set[str]) -> str:
        # Longest first: "sept." before "sept".
        return "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))

    out: dict[str, str] = {}
    for language in ("fr", "es", "ru"):
        months: set[str] = set()
        for width in ("wide", "abbreviated"):
            months.update(get_month_names(width, "format", language).values())
        months = {m for m in months if len(m.rstrip(".")) >= 3}
        out[f"{language}_months"] = alternation(months)
        days = set(get_day_names("wide", "format", language).values())
        out[f"{language}_days"] = alternation(days | {d.capitalize() for d in days})
    out["ja_days"] = alternation(set(get_day_names("wide", "format", "ja").values()))
    groups = {" ", "’", "'"}
    for language in ("en", "de", "de_CH", "fr", "es", "ru", "ja", "zh"):
        groups.add(get_group_symbol(language))
    out["groups"] = "".join(sorted(re.escape(g) for g in groups if len(g) == 1))
    signs = set(_SIGNS)
    for language in ("en", "de", "fr", "es", "ru", "ja", "zh"):
        for code in _CODES:
            symbol = get_currency_symbol(code, language)
            if len(symbol) == 1 and not symbol.isalnum():
                signs.add(symbol)
    out["signs"] = "".join(sorted(re.escape(s) for s in signs))
    return out


# Currencies written as words after an amount, in the languages read.
_CURRENCY_WORDS = (
    r"euros?|dollars?|dólares|pesos|рублей|рубля|рубль|руб\.|р\.|евро|долларов|円|万円|ドル"
)
_LATIN_UPPER = "A-ZÀ-ÖØ-Þ"
_LATIN_LOWER = "a-zß-öø-ÿ"
# A Japanese text's kanji and kana.
_JA = r"\u3040-\u30ff\u4e00-\u9fff"


@functools.cache
def language_facts() -> dict[str, list[tuple]]:
    """(kind, weight, pattern[, what a text must hold for it to be tried]) per language;
    "all" applies to every text. Where a pattern has a group "v", the fact is that group
    (the rest is context, like the word before a name). Built once, when first needed
    (the month names and group separators are CLDR's, :func:`_cldr`)."""
    cldr = _cldr()
    amount, amount_rest = _amount(".," + cldr["groups"])
    signs = cldr["signs"]
    upper, lower = _LATIN_UPPER, _LATIN_LOWER
    latin_name = rf"[{upper}][{lower}]+(?:[- ][{upper}][{lower}]+)?"
    return {
        "all": [
            (
                "iban",
                6,
                r"[A-Z](?<!\w[A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
                Digits(before=r"(?<=[A-Z][A-Z]\d)"),
            ),
            (
                "bic",
                5,
                r"[A-Z](?<!\w[A-Z])[A-Z]{3}(?:DE|AT|CH|CN|HK|GB|US|FR|IT|ES|NL|BE|LU|JP|SG|RU)"
                r"[A-Z0-9]{2}(?:[A-Z0-9]{3})?\b",
            ),
            # A currency sign or code before or after an amount in any notation.
            (
                "money",
                5,
                rf"[{signs}] ?(?:{amount})",
                _SIGNS,
                Digits(before=rf"(?<=[{signs}]\d)|(?<=[{signs}] \d)"),
            ),
            (
                "money",
                5,
                word_group(_CURRENCY_CODES) + rf" ?(?:{amount})",
                _CODES,
                Digits(before=rf"(?<=(?:{_CURRENCY_CODES})\d)|(?<=(?:{_CURRENCY_CODES}) \d)"),
            ),
            (
                "money",
                5,
                _NUMBER_START + rf"(?:{amount_rest}) ?(?:[{signs}]|(?:{_CURRENCY_CODES})\b"
                rf"|(?:{_CURRENCY_WORDS})(?!\w))",
                Digits(
                    after=rf" (?:[{signs}]|{_CURRENCY_CODES}|{_CURRENCY_WORDS})"
                    rf"|[{signs}]|{_CURRENCY_CODES}|{_CURRENCY_WORDS}"
                ),
            ),
            # A hyphenated ISBN-13 (978-4-06-123456-7).
            (
                "identifier",
                5,
                _NUMBER_START + r"(?<=9)7[89]-\d{1,5}-\d{1,7}-\d{1,7}-[\dX]\b",
                Digits(after=r"-(?<=97[89]-)\d"),
            ),
        ],
        "de": [
            (
                "date",
                4,
                _NUMBER_START + r"\d?\.\d{1,2}\.(?:\d{4}|\d{2})(?!\.?\d)",
                Digits(before=r"(?<![\w.,]\d)", after=r"\.\d\d?\.(?:\d{4}|\d{2})(?!\.?\d)"),
            ),
            *_TABLES["de"][1:],
        ],
        "fr": [
            # 7 décembre 2026, 1er mars, 7 déc. 2026
            (
                "date",
                4,
                _NUMBER_START + rf"\d?(?:er)? (?:{cldr['fr_months']})(?: \d{{4}})?(?!\w)",
                Digits(after=each_led(("er ", " "), f"(?:{cldr['fr_months']})")),
            ),
            ("date", 3, word_group(cldr["fr_days"]) + r"\b"),
            # A day of the month said alone: "le 14", "au lieu du 12".
            (
                "date",
                3,
                word_group("le|du|au|Le|Du|Au")
                + r" (?P<v>\d{1,2}(?:er)?)(?![\w/%€-]|[.,:]\d| ?(?:h\b|%|€))",
                Digits(before=r"(?<=(?:le|du|au|Le|Du|Au) \d)"),
            ),
            (
                "time",
                3,
                _NUMBER_START + r"\d? ?h ?\d{2}\b",
                Digits(after=each_led((" h", "h"), r" ?\d\d\b")),
            ),
            (
                "address",
                5,
                _NUMBER_START + r"\d{0,3}(?: ?(?:bis|ter))?,? (?:rue|avenue|av\.|boulevard|bd"
                r"|place|chemin|allée|impasse|quai|route|cours) (?:de la |du |des |de |d'|d’|l'"
                rf"|l’)?[{upper}][\w'’-]*(?: [{upper}][\w'’-]*){{0,3}}"
                rf"(?:, \d{{5}} [{upper}][\w-]+)?",
                Digits(
                    after=each_led(
                        (" bis,", " bis", " ter,", " ter", "bis,", "bis", "ter,", "ter", ",", ""),
                        r" (?:rue|avenue|av\.|boulevard|bd|place|chemin|allée|impasse|quai"
                        r"|route|cours) ",
                    )
                ),
            ),
            ("name", 3, word_group(r"M\.|Mme|Mlle|Monsieur|Madame|Maître") + " " + latin_name),
        ],
        "es": [
            # 7 de diciembre de 2026
            (
                "date",
                4,
                _NUMBER_START + rf"\d? de (?:{cldr['es_months']})(?: de(?:l)? \d{{4}})?(?!\w)",
                Digits(after=rf" de (?:{cldr['es_months']})"),
            ),
            ("date", 3, word_group(cldr["es_days"]) + r"\b"),
            # "el 14 y no el 12", "en vez del 12"
            (
                "date",
                3,
                word_group("el|del|al|El")
                + r" (?P<v>\d{1,2})(?![\w/%€-]|[.,:]\d| ?(?:h\b|%|€|de\b))",
                Digits(before=r"(?<=(?:el|al|El) \d)"),
            ),
            (
                "address",
                5,
                word_group(
                    r"Calle|C/|Avenida|Avda\.|Av\.|Paseo|Plaza|Pza\.|Camino|Carretera|Ronda"
                    r"|Travesía|Glorieta"
                )
                + r" (?:de la |de los |de las |del |de )?"
                + rf"[{upper}][\w-]*(?: [{upper}][\w-]*){{0,3}},? (?:n\.?º ?)?\d+[A-Za-z]?\b"
                + rf"(?:, \d{{5}} [{upper}][\w-]+)?",
            ),
            (
                "name",
                3,
                word_group(r"Sr\.|Sra\.|Srta\.|Don|Doña|Dña\.|Dra\.") + " " + latin_name,
            ),
        ],
        "en": _TABLES["en"][:-1]
        + [
            # Two capitalised words, the first not one that starts a sentence ("Lena
            # Hoffmann", "José García"), in the Latin-script languages (those words:
            # ``NAME_WORDS``).
            (
                "name",
                2,
                rf"[{upper}](?<![\w.-][{upper}])[{lower}]+ [{upper}][{lower}]{{2,}}"
                rf"(?:-[{upper}][{lower}]+)?\b",
            ),
        ],
        "zh": [
            (
                "amount",
                5,
                r"\d(?<!\d\d)\d*(?:\.\d+)?[亿万千百]+(?:\d+[亿万千百]+)*(?:元|块|人民币|円)?",
            ),
            ("date", 4, r"\d(?<!\d\d)\d{3}年\d{1,2}月(?:\d{1,2}[日号])?"),
            ("date", 4, r"\d(?<!\d\d)\d?月\d{1,2}[日号]"),
            *_TABLES["zh"][2:],
        ],
        "ja": [
            ("amount", 5, r"\d(?<!\d\d)(?:\d{0,2}(?:,\d{3})+|\d*)(?:\.\d+)?[万億千]?円"),
            ("date", 3, rf"(?:{cldr['ja_days']})"),
            ("date", 3, r"\d(?<!\d\d)\d?日(?![曜本])"),
            ("time", 3, r"\d(?<!\d\d)\d?時(?:\d{1,2}分|半)?"),
            ("time", 3, r"(?:午前|午後)\d{1,2}時(?:\d{1,2}分|半)?"),
            (
                "address",
                5,
                r"(?:〒\d{3}-\d{4} ?)?(?:東京都|北海道|大阪府|京都府|[\u4e00-\u9fff]{2,3}県)"
                rf"[{_JA}]{{1,12}}?\d+(?:(?:丁目|番地?|号)\d*|[-－]\d+)*",
            ),
            (
                "name",
                3,
                r"[はがをにのとも、。：:「\s](?P<v>[\u4e00-\u9fff]{2,4})(?:さん|様|氏|先生)",
            ),
            # An ASCII identifier right after or before Japanese (JP-20261207-0042です),
            # where the combined pattern sees no word boundary.
            (
                "identifier",
                4,
                r"[A-Za-z0-9](?<![A-Za-z0-9_.-][A-Za-z0-9])(?=[A-Za-z0-9_-]*\d)"
                r"(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]*[A-Za-z0-9](?![A-Za-z0-9_-])",
            ),
        ],
        "ru": [
            # 7 декабря 2026 (г.)
            ("date", 4, _NUMBER_START + rf"\d? (?:{cldr['ru_months']})(?: \d{{4}})?(?!\w)"),
            ("date", 3, word_group(cldr["ru_days"]) + r"(?!\w)"),
            (
                "address",
                5,
                r"(?:г\. ?[А-ЯЁ][а-яё-]+, )?(?:ул\.|улица|пр-т|просп\.|проспект|пер\.|переулок"
                r"|наб\.|набережная|ш\.|шоссе|бул\.|бульвар|пл\.|площадь) ?[А-ЯЁ][а-яё-]+"
                r"(?: [А-ЯЁа-яё-]+)?,? (?:д\. ?|дом )?\d+[а-я]?(?!\w)"
                r"(?:,? (?:корп\.|стр\.|кв\.|офис) ?\d+)*",
            ),
            # Невский проспект, 28
            (
                "address",
                5,
                r"[А-ЯЁ](?<!\w[А-ЯЁ])[а-яё-]+ (?:проспект|шоссе|бульвар|переулок|улица|набережная)"
                r",? (?:д\. ?|дом )?\d+[а-я]?(?!\w)",
            ),
            # Cyrillic identifiers: ТП-2026-0412, СЧ-40074, СЧ-118/26.
            (
                "identifier",
                4,
                r"[А-ЯЁ](?<![\w-][А-ЯЁ])[А-ЯЁA-Z]{0,5}[-/№]?\d[\dА-ЯЁA-Z/-]*(?<![/-])",
            ),
            (
                "name",
                3,
                word_group("г-н|г-жа|господин|госпожа|Господин|Госпожа") + r" [А-ЯЁ][а-яё]+"
                r"(?: [А-ЯЁ][а-яё]+){0,2}",
            ),
            (
                "name",
                2,
                r"[А-ЯЁ](?<![\w.-][А-ЯЁ])[а-яё]+ [А-ЯЁ][а-яё]{2,}"
                r"(?: [А-ЯЁ][а-яё]+(?:вич|вна|ична))?(?!\w)",
            ),
            (
                "number",
                3,
                _NUMBER_START + r"(?:\d{0,2}(?:[ \u00a0\u202f]\d{3})+(?:,\d+)?|\d*,\d+|\d*)"
                r" ?(?:шт\.|кг|км|т|м²|человек|дней|дня|месяцев|часов|%)(?![\w²])",
            ),
        ],
    }


# Which texts a language's rows are tried on: those holding a character of its script.
SCRIPTS = {
    "all": "any",
    "de": "any",
    "fr": "any",
    "es": "any",
    "en": "any",
    "zh": "cjk",
    "ja": "cjk",
    "ru": "cyrillic",
}

NAME_WORDS = frozenset(_NAME_WORDS.split("|"))


@dataclass(frozen=True, slots=True)
class Found:
    start: int
    end: int
    kind: str
    value: str
    weight: int


# What texts scanned together are joined by. No pattern matches across a line break, and
# the NUL after it is what no fact starts or ends with and no pattern takes as context
# (not white space, not a word character): to every pattern, each text's edges look
# as they do when it is scanned alone.
SEPARATOR = "\n\x00"

# White space to Unicode that the ASCII classes do not count as such.
_UNICODE_ONLY_SPACE = ("\x1c", "\x1d", "\x1e", "\x1f")


def is_plain_ascii(text: str) -> bool:
    """Whether ``text`` reads the same to ASCII and to Unicode character classes (\\w, \\d,
    \\s, \\b): then the regex engine tests them by table look-up, not Unicode database
    calls for every character, several times faster."""
    return text.isascii() and not any(c in text for c in _UNICODE_ONLY_SPACE)


def plain_ascii_apart(texts: list[str]) -> list[list[int]]:
    """The places of ``texts`` in two batches: the plain ASCII ones (:func:`is_plain_ascii`)
    and the others; empty batches left out."""
    plain: list[int] = []
    other: list[int] = []
    for i, text in enumerate(texts):
        (plain if is_plain_ascii(text) else other).append(i)
    return [batch for batch in (plain, other) if batch]


# A fact found by the tables at its place in a text: (start, end, kind, value, weight).
Placed = tuple[int, int, str, str, int]

# The characters of each script a language's rows need (``SCRIPTS``).
_SCRIPT_CHARACTER = {
    "cjk": re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]"),
    "cyrillic": re.compile(r"[\u0400-\u04ff]"),
}


@dataclass(frozen=True, slots=True)
class _Row:
    kind: str
    weight: int
    pattern: re.Pattern[str]
    needs: tuple[str, ...]  # tried only on texts holding one of these
    valued: bool  # the fact is its group "v"


@dataclass(frozen=True, slots=True)
class _Tables:
    """The tables compiled, per script ("any", "cjk", "cyrillic"): the rows whose matches
    hold a run of digits (:class:`Digits`), run over the lines where the script's
    ``digit_runs`` pattern finds one, and the others, run over whole texts."""

    rows: tuple[_Row, ...]
    anchored: dict[str, tuple[int, ...]]
    others: dict[str, tuple[int, ...]]
    digit_runs: dict[str, re.Pattern[str]]


@functools.cache
def _tables(plain_ascii: bool = False) -> _Tables:
    """Compiled once, when first needed; ``plain_ascii``: with ASCII character classes,
    for plain ASCII texts (:func:`is_plain_ascii`), where they match the same."""
    flags = re.ASCII if plain_ascii else 0
    rows: list[_Row] = []
    anchored: dict[str, list[int]] = {}
    others: dict[str, list[int]] = {}
    runs: dict[str, list[tuple[str, str]]] = {}  # per script: each row's (before, after)
    for language, table in language_facts().items():
        script = SCRIPTS[language]
        for row in table:
            pattern = row[2]
            needs = next((x for x in row[3:] if isinstance(x, tuple)), None)
            digits = next((x for x in row[3:] if isinstance(x, Digits)), None)
            order = len(rows)
            rows.append(
                _Row(
                    row[0],
                    row[1],
                    re.compile(pattern, flags),
                    leading_words(pattern) if needs is None else needs,
                    "(?P<v>" in pattern,
                )
            )
            if digits is None:
                others.setdefault(script, []).append(order)
                continue
            anchored.setdefault(script, []).append(order)
            runs.setdefault(script, []).append((digits.before, digits.after))
    # The first digit of a run, then what any row needs of it: one pass finds the lines
    # the rows with digits can match in.
    digit_runs = {}
    for script, conditions in runs.items():
        # What follows the run, for the rows with the same condition on its start (or
        # none): tried once, by the character after the run.
        afters: dict[str, list[str]] = {}  # by what the run's start needs
        for before, after in conditions:
            afters.setdefault(before, []).append(after)
        tails = [
            f"(?:{before})"
            + (rf"\d*+(?:{by_first_character('|'.join(found))})" if any(found) else "")
            for before, found in afters.items()
            if before
        ]
        if "" in afters:
            tails.append(r"\d*+(?:" + by_first_character("|".join(afters[""])) + ")")
        digit_runs[script] = re.compile(r"\d(?<!\d\d)(?:" + "|".join(tails) + ")", flags)
    return _Tables(
        tuple(rows),
        {script: tuple(found) for script, found in anchored.items()},
        {script: tuple(found) for script, found in others.items()},
        digit_runs,
    )


# The kinds only these tables find, in the order a check ranks them among equals (after
# the combined pattern's kinds).
KINDS = ("iban", "bic", "money", "address", "phone", "amount", "name")
# A text in lower case and digits-free ASCII holds none of these.
_WORTH_A_LOOK = re.compile(r"[\dA-ZÀ-ÖØ-Þ\u0400-\u04ff\u3040-\u30ff\u4e00-\u9fff]")
# International ("+49 30 901820"), national with a trunk prefix ("(030) 2345 6789",
# "0421 3344556") or a Chinese mobile number ("139 1234 5678"); the library decides.
# Each alternative starts with its first character and checks the one before it looking
# back: the regex engine then stops only at "+", "(", "0" and "1", not at every character.
_NOT_AFTER = "(?<![A-Za-z0-9_+.,/-]{})"
_PHONE_CANDIDATE = re.compile(
    r"(?:\+" + _NOT_AFTER.format(r"\+") + r"\d{1,3}[ \u00a0-]?(?:\(0?\d{1,5}\)[ \u00a0-]?)?\d{1,5}"
    r"|\(" + _NOT_AFTER.format(r"\(") + r"0\d{1,5}\)[ \u00a0]?\d{2,5}"
    r"|0" + _NOT_AFTER.format("0") + r"\d{1,5}"
    r"|1" + _NOT_AFTER.format("1") + r"[3-9]\d)"
    r"(?:[ \u00a0/-]?\d{2,8}){1,4}(?![\w.,/-]?\d)"
)
# The regions whose national numbers ("030 …", "139 …") are read without a country code.
PHONE_REGIONS = ("DE", "CN", "GB", "US")


def _iban_ok(value: str) -> bool:
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    digits = "".join(str(int(c, 36)) for c in moved)
    return int(digits) % 97 == 1


@functools.lru_cache(maxsize=4096)
def _phone_ok(value: str) -> bool:
    """Whether the library reads ``value`` as a phone number (cached: parsing it for four
    regions costs more than the rest of a text's scan)."""
    digits = sum(c.isdigit() for c in value)
    if digits < 7 or digits > 15:
        return False
    for region in PHONE_REGIONS:
        try:
            number = phonenumbers.parse(value, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return True
        # A number written with its country code is meant as one even in a range the
        # numbering plan keeps for examples (UK drama numbers, US 555).
        if value.startswith("+") and phonenumbers.is_possible_number(number):
            return True
    return False


def locale_facts(text: str) -> list[Found]:
    """The facts of ``text`` that the language tables and the phone-number library find,
    in order, none overlapping."""
    return [Found(*fact) for fact in locale_facts_of([text])[0]]


def locale_facts_of(texts: list[str], *, windowed: bool = True) -> list[list[Placed]]:
    """:func:`locale_facts` of each of ``texts``, as (start, end, kind, value, weight).

    The texts are scanned together, joined by :data:`SEPARATOR`: each pattern makes one
    pass over all of them (a script's rows over the texts holding that script), whatever
    their number, so the cost is linear in what is read and a pass's overhead is paid
    once per batch, not once per text. The rows whose facts hold digits read only the
    lines one pass found a run of digits in that one of them needs (:func:`digit_lines`);
    ``windowed=False``: every row reads everything (the same facts, for the tests).
    """
    out: list[list[Placed]] = [[] for _ in texts]
    worth = [i for i, text in enumerate(texts) if _WORTH_A_LOOK.search(text)]
    if not worth:
        return out
    # Per text: (start, row, stop, kind, value, weight) of every row's matches.
    matches: list[list[tuple]] = [[] for _ in texts]
    for script in dict.fromkeys(SCRIPTS.values()):
        if script == "any":
            chosen = worth
        else:
            has = _SCRIPT_CHARACTER[script].search
            chosen = [i for i in worth if has(texts[i])]
        for batch in plain_ascii_apart([texts[i] for i in chosen]):
            picked = [chosen[i] for i in batch]
            tables = _tables(is_plain_ascii(texts[picked[0]]))
            _scan_rows(
                tables,
                script,
                [texts[i] for i in picked],
                [matches[i] for i in picked],
                windowed=windowed,
            )
    joined = SEPARATOR.join([texts[i] for i in worth])
    offsets = list(
        itertools.accumulate((len(texts[i]) + len(SEPARATOR) for i in worth[:-1]), initial=0)
    )
    phones: list[list[tuple[int, int, str]]] = [[] for _ in texts]
    for match in _PHONE_CANDIDATE.finditer(joined):
        n = bisect.bisect_right(offsets, match.start()) - 1
        base = offsets[n]
        phones[worth[n]].append((match.start() - base, match.end() - base, match.group()))
    for i in worth:
        if matches[i] or phones[i]:
            out[i] = _resolved(matches[i], phones[i])
    return out


def _scan_rows(
    tables: _Tables,
    script: str,
    texts: list[str],
    matches: list[list[tuple]],
    *,
    windowed: bool = True,
) -> None:
    """A script's rows over ``texts`` joined; each text's matches added to ``matches``.
    The rows with digits (:class:`Digits`) run over the lines holding a run of digits
    that one of them needs (:func:`digit_lines`); ``windowed=False``: every row over all
    of it (what the lines must give, for the tests)."""
    rows = tables.rows
    joined = SEPARATOR.join(texts)
    offsets = list(
        itertools.accumulate((len(text) + len(SEPARATOR) for text in texts[:-1]), initial=0)
    )
    found: list[tuple] = []
    anchored = tables.anchored.get(script, ())
    if anchored and windowed:
        spans = digit_lines(tables.digit_runs[script], joined)
        if spans:
            window = "".join([joined[start:stop] for start, stop in spans])
            # Where each span starts in the window, and how far it is moved from the text.
            starts = list(
                itertools.accumulate((stop - start for start, stop in spans[:-1]), initial=0)
            )
            moved = [start - at for (start, _), at in zip(spans, starts, strict=True)]
            in_window: list[tuple] = []
            for order in anchored:
                row = rows[order]
                if row.needs and not any(n in window for n in row.needs):
                    continue
                _row_matches(row, order, window, in_window)
            for fact in in_window:
                shift = moved[bisect.bisect_right(starts, fact[0]) - 1]
                found.append((fact[0] + shift, fact[1], fact[2] + shift, *fact[3:]))
        anchored = ()
    for order in (*anchored, *tables.others.get(script, ())):
        row = rows[order]
        if row.needs and not any(n in joined for n in row.needs):
            continue
        _row_matches(row, order, joined, found)
    for fact in found:
        n = bisect.bisect_right(offsets, fact[0]) - 1
        base = offsets[n]
        matches[n].append((fact[0] - base, fact[1], fact[2] - base, *fact[3:]))


def digit_lines(digit_runs: re.Pattern[str], joined: str) -> list[tuple[int, int]]:
    """The lines of ``joined`` where ``digit_runs`` finds a run of digits, as (start,
    stop) spans, adjacent lines merged: each with the line break before it and the one
    after it (the context a pattern may look at; no pattern matches across a line break),
    so that a row over the spans joined finds, at the same places, what it finds over
    ``joined``. After a run is found, the search goes on at the next line."""
    spans: list[tuple[int, int]] = []
    search, find, rfind = digit_runs.search, joined.find, joined.rfind
    match = search(joined)
    while match is not None:
        at = match.start()
        start = max(rfind("\n", 0, at), 0)
        stop = find("\n", at)
        stop = len(joined) if stop < 0 else stop + 1
        if spans and start < spans[-1][1]:
            spans[-1] = (spans[-1][0], stop)
        else:
            spans.append((start, stop))
        match = search(joined, stop)
    return spans


def _row_matches(row: _Row, order: int, joined: str, found: list[tuple]) -> None:
    """The matches of one row over ``joined``; a match that fails its check (an IBAN's
    checksum, a name that is a sentence's first word) is looked past by one character,
    so that what starts inside it is still found."""
    kind, search, at = row.kind, row.pattern.search, 0
    match = search(joined, at)
    while match is not None:
        start, stop = match.span("v") if row.valued else match.span()
        value = joined[start:stop]
        if (kind == "iban" and not _iban_ok(value)) or (
            kind == "name" and value.split(" ", 1)[0] in NAME_WORDS
        ):
            match = search(joined, match.start() + 1)
            continue
        found.append((start, order, stop, kind, value, row.weight))
        match = search(joined, match.end() if match.end() > match.start() else match.end() + 1)


def _resolved(matches: list[tuple], candidates: list[tuple[int, int, str]]) -> list[Placed]:
    """One text's facts: where two matches overlap, the one that starts first wins, then
    the earlier in the tables; then the phone numbers the library accepts among the
    candidates that overlap none of them."""
    matches.sort()
    found: list[Placed] = []
    end = 0
    for start, _, stop, kind, value, weight in matches:
        if start >= end:
            found.append((start, stop, kind, value, weight))
            end = stop
    if not candidates:
        return found
    starts = [fact[0] for fact in found]
    phones: list[Placed] = []
    for start, stop, value in candidates:
        # The facts are in order and do not overlap: only the one starting last before
        # the candidate's end can overlap it.
        at = bisect.bisect_left(starts, stop) - 1
        if at >= 0 and found[at][1] > start:
            continue
        if _phone_ok(value):
            phones.append((start, stop, "phone", value, 5))
    return sorted(found + phones) if phones else found
