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

import re
from dataclasses import dataclass

import phonenumbers

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
_CURRENCY_CODES = r"EUR|USD|GBP|CHF|CNY|RMB|JPY"
# What a row needs in a text to be tried at all (a substring search costs next to
# nothing; a pattern, a pass over the text).
_SIGNS = ("€", "$", "£", "¥", "￥")
_CODES = tuple(_CURRENCY_CODES.split("|"))
# An amount in any notation: 12,000 / 12.380,50 / 2’450.00 / 3 400 / 980 / 8,750.00.
_AMOUNT = r"\d{1,3}(?:[.,’' ]\d{3})+(?:[.,]\d{1,2})?(?!\d)|\d+(?:[.,]\d{1,2})?(?![\d.,]\d)"
# The same after its first digit (for patterns that check the start of a number there).
_AMOUNT_REST = r"\d{0,2}(?:[.,’' ]\d{3})+(?:[.,]\d{1,2})?(?!\d)|\d*(?:[.,]\d{1,2})?(?![\d.,]\d)"
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
)


def _words(alternatives: str) -> str:
    """``a|b|…`` (literal words) as a group each of whose words must start a word. The
    regex engine skips to a pattern's possible first characters only when the pattern
    starts with them: the boundary is checked just after each word, looking back."""
    return "(?:" + "|".join(f"{w}(?<!\\w{w})" for w in alternatives.split("|")) + ")"


# A digit that starts a number (no letter, digit, "." or "," right before it).
_NUMBER_START = r"\d(?<![\w.,]\d)"

# (kind, weight, pattern[, what a text must hold for it to be tried]) per language; "all"
# applies to every text. Where a pattern has a
# group "v", the fact is that group (the rest is context, like the word before a name).
LANGUAGE_FACTS: dict[str, list[tuple]] = {
    "all": [
        ("iban", 6, r"[A-Z](?<!\w[A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"),
        (
            "bic",
            5,
            r"[A-Z](?<!\w[A-Z])[A-Z]{3}(?:DE|AT|CH|CN|HK|GB|US|FR|IT|ES|NL|BE|LU|JP|SG)"
            r"[A-Z0-9]{2}(?:[A-Z0-9]{3})?\b",
        ),
        # A currency sign or code before or after an amount in any notation.
        ("money", 5, r"[€$£¥￥] ?(?:" + _AMOUNT + ")", _SIGNS),
        ("money", 5, _words(_CURRENCY_CODES) + r" ?(?:" + _AMOUNT + ")", _CODES),
        (
            "money",
            5,
            _NUMBER_START + r"(?:" + _AMOUNT_REST + r") ?(?:[€$£¥]|(?:" + _CURRENCY_CODES + r")\b)",
            _SIGNS + _CODES,
        ),
    ],
    "de": [
        ("date", 4, r"\d(?<![\d.]\d)\d?\.\d{1,2}\.(?:\d{4}|\d{2})(?!\.?\d)"),
        ("date", 4, _NUMBER_START + r"\d?\. ?(?:" + _DE_MONTHS + r")(?: \d{4})?\b"),
        (
            "date",
            3,
            _words("Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag") + r"\b",
            ("tag", "woch"),
        ),
        (
            "address",
            5,
            r"[A-ZÄÖÜ](?<!\w[A-ZÄÖÜ])[\wäöüß-]*(?:straße|strasse|str\.|weg|platz|allee|gasse"
            r"|ring|damm|ufer) \d+ ?[a-z]?\b(?:, \d{5} [A-ZÄÖÜ][\wäöüß-]+)?",
        ),
        # German notation with a unit: "1.234.567", "4,8 t", "2.500 Stück", "8,5 %".
        (
            "number",
            3,
            _NUMBER_START + r"(?:" + _DE_DIGITS_REST + r") ?(?:" + _DE_UNITS + r")(?![\w²])",
        ),
        ("number", 3, _NUMBER_START + r"\d{0,2}(?:\.\d{3}){2,}(?![\w.,]\d)"),
        (
            "name",
            3,
            _words(r"Dr\.|Prof\.|Herr|Frau") + r" [A-ZÄÖÜ][a-zäöüß]+"
            r"(?: [A-ZÄÖÜ][a-zäöüß]+(?:-[A-ZÄÖÜ][a-zäöüß]+)?)?",
        ),
    ],
    "en": [
        ("date", 4, _words(_EN_MONTHS) + r"\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b"),
        ("date", 4, _NUMBER_START + r"\d?(?:st|nd|rd|th)? (?:" + _EN_MONTHS + r")\.?,? \d{4}\b"),
        ("date", 4, _NUMBER_START + r"\d{3}/\d{1,2}/\d{1,2}\b"),
        (
            "date",
            3,
            _words("Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday") + r"\b",
            ("day",),
        ),
        (
            "address",
            5,
            _NUMBER_START + r"\d*[A-Z]? (?:[A-Z][a-z]+ ){1,3}(?:Street|St\.|Road|Rd\.|Avenue"
            r"|Ave\.|Lane|Way|Drive|Boulevard|Square|Place)(?:, [A-Z][a-z]+"
            r"(?: [A-Z]{1,2}\d[A-Z\d]? \d[A-Z]{2}| [A-Z]{2} \d{5})?)?",
        ),
        ("name", 3, _words(r"Dr\.|Prof\.|Mr\.|Mrs\.|Ms\.") + r" [A-Z][a-z]+(?: [A-Z][a-z]+)?"),
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
        ("amount", 5, r"\d+(?:\.\d+)?[亿万千百]+(?:\d+[亿万千百]+)*(?:元|块|人民币)?"),
        ("date", 4, r"\d{4}年\d{1,2}月(?:\d{1,2}[日号])?|\d{1,2}月\d{1,2}[日号]"),
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
NAME_WORDS = frozenset(_NAME_WORDS.split("|"))


@dataclass(frozen=True, slots=True)
class Found:
    start: int
    end: int
    kind: str
    value: str
    weight: int


_CJK = re.compile(r"[\u4e00-\u9fff]")
# (kind, weight, pattern, whether it needs a CJK character), in the tables' order.
_ROWS = [
    (row[0], row[1], re.compile(row[2]), language == "zh", row[3] if len(row) > 3 else ())
    for language, rows in LANGUAGE_FACTS.items()
    for row in rows
]
# The kinds only these tables find, in the order a check ranks them among equals (after
# the combined pattern's kinds).
KINDS = ("iban", "bic", "money", "address", "phone", "amount", "name")
# A text in lower case and digits-free ASCII holds none of these.
_WORTH_A_LOOK = re.compile(r"[\dA-Z\u4e00-\u9fff]")
# International ("+49 30 901820"), national with a trunk prefix ("(030) 2345 6789",
# "0421 3344556") or a Chinese mobile number ("139 1234 5678"); the library decides.
_PHONE_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9_+.,/-])(?:\+\d{1,3}[ \u00a0-]?(?:\(0?\d{1,5}\)[ \u00a0-]?)?\d{1,5}"
    r"|\(0\d{1,5}\)[ \u00a0]?\d{2,5}|0\d{1,5}|1[3-9]\d)"
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


def _phone_ok(value: str) -> bool:
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
    if not _WORTH_A_LOOK.search(text):
        return []
    cjk = _CJK.search(text) is not None
    matches = []
    for order, (kind, weight, pattern, needs_cjk, needs) in enumerate(_ROWS):
        if (needs_cjk and not cjk) or (needs and not any(n in text for n in needs)):
            continue
        for match in pattern.finditer(text):
            start, stop = match.span("v") if "v" in pattern.groupindex else match.span()
            value = text[start:stop]
            if kind == "iban" and not _iban_ok(value):
                continue
            if kind == "name" and value.split(" ", 1)[0] in NAME_WORDS:
                continue
            matches.append((start, order, stop, kind, value, weight))
    # Where two overlap, the one that starts first wins, then the earlier in the tables.
    matches.sort()
    found: list[Found] = []
    end = 0
    for start, _, stop, kind, value, weight in matches:
        if start >= end:
            found.append(Found(start, stop, kind, value, weight))
            end = stop
    taken = [(f.start, f.end) for f in found]
    for match in _PHONE_CANDIDATE.finditer(text):
        start, end = match.span()
        if any(s < end and start < e for s, e in taken):
            continue
        if _phone_ok(match.group()):
            found.append(Found(start, end, "phone", match.group(), 5))
    found.sort(key=lambda f: f.start)
    return found
