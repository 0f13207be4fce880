"""Facts as English, German and Chinese write them (contextmgmt/core/factlang.py), found by
the fact scan and kept by the fact check: amounts with locale separators and currencies,
IBAN/BIC, phone numbers, postal addresses, dates, CJK amounts and names."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core import factlang
from contextmgmt.core.factcheck import check_key_facts, extract_facts
from contextmgmt.core.factlang import (
    _tables,
    language_facts,
    locale_facts,
    locale_facts_of,
)

# (a real-looking message, the fact it states, its kind), per language and kind.
EXAMPLES = [
    # German
    ("Das Angebot für den Messestand liegt bei 12.380,50 € netto.", "12.380,50 €", "money"),
    ("Die Kaution für die Halle beträgt 1.250,00 EUR, fällig sofort.", "1.250,00 EUR", "money"),
    ("Die Umzugsversicherung kostet € 3.400 pauschal.", "€ 3.400", "money"),
    ("Die Besucherzahl der letzten Messe war 1.234.567 laut Veranstalter.", "1.234.567", "number"),
    ("Das Standgewicht beträgt 4,8 t inklusive Rigging.", "4,8 t", "number"),
    ("Wir drucken 2.500 Stück Flyer für den Stand.", "2.500 Stück", "number"),
    ("Der Frühbucherrabatt beträgt 8,5 % bis Ende Februar.", "8,5 %", "number"),
    (
        "Bitte überweise die Anzahlung auf DE89 3704 0044 0532 0130 00, danke!",
        "DE89 3704 0044 0532 0130 00",
        "iban",
    ),
    ("Die BIC der Commerzbank ist COBADEFFXXX, steht auch auf der Rechnung.", "COBADEFFXXX", "bic"),
    ("Die Zentrale in Berlin erreichst du unter +49 30 901820.", "+49 30 901820", "phone"),
    ("Der Hausmeister ist unter (030) 2345 6789 erreichbar.", "(030) 2345 6789", "phone"),
    ("Das Büro in Bremen hat die Nummer 0421 3344556.", "0421 3344556", "phone"),
    (
        "Die Lieferadresse ist Musterstraße 12, 10115 Berlin, Hinterhof.",
        "Musterstraße 12, 10115 Berlin",
        "address",
    ),
    ("Der Aufbau beginnt am 14.03.2027, bitte früh da sein.", "14.03.2027", "date"),
    ("Die Versicherung läuft am 30. April 2027 aus.", "30. April 2027", "date"),
    ("Das Abschlussgespräch ist am Mittwoch.", "Mittwoch", "date"),
    ("Unsere Ansprechpartnerin bei der Messe ist Dr. Katrin Vogel.", "Dr. Katrin Vogel", "name"),
    ("Maximilian Schröder übernimmt die Standbetreuung.", "Maximilian Schröder", "name"),
    # English
    ("The Shanghai hotel block costs ¥12,000 for the whole team.", "¥12,000", "money"),
    ("The standing desks cost £1,299.99 each, delivery included.", "£1,299.99", "money"),
    (
        "The landlord's IBAN is GB29NWBK60161331926819, reference MOVE-7.",
        "GB29NWBK60161331926819",
        "iban",
    ),
    ("The London office number is +44 20 7946 0958.", "+44 20 7946 0958", "phone"),
    ("Our US partner's direct line is +1 415 555 0132.", "+1 415 555 0132", "phone"),
    (
        "Invoices go to 221B Baker Street, London NW1 6XE from now on.",
        "221B Baker Street, London NW1 6XE",
        "address",
    ),
    ("The press breakfast is on March 18, 2027 at the venue.", "March 18, 2027", "date"),
    ("IT cutover is scheduled for 2027/07/09.", "2027/07/09", "date"),
    ("Oliver Grant signs for the London side.", "Oliver Grant", "name"),
    # Chinese
    ("展台搭建费是3万5千元。", "3万5千元", "amount"),
    ("去年展会的总成交额是1.2亿。", "1.2亿", "amount"),
    ("集团今年的采购总额是2亿3千万。", "2亿3千万", "amount"),
    ("每箱限重120公斤。", "120公斤", "number"),
    ("我们租的是5层整层。", "5层", "number"),
    ("样品请寄到北京市朝阳区建国路88号。", "北京市朝阳区建国路88号", "address"),
    ("展馆地址是上海市浦东新区龙阳路2345号。", "上海市浦东新区龙阳路2345号", "address"),
    ("展会开幕日期是2027年3月15日。", "2027年3月15日", "date"),
    ("乔迁仪式定在7月12日。", "7月12日", "date"),
    ("王芳的手机号是 +86 138 0013 8000。", "+86 138 0013 8000", "phone"),
    ("刘洋的手机是139 1234 5678。", "139 1234 5678", "phone"),
    ("上海展会的对接人是王芳。", "王芳", "name"),
    ("搭建公司的负责人叫陈建国。", "陈建国", "name"),
]


@pytest.mark.parametrize(("message", "fact", "kind"), EXAMPLES, ids=[e[1] for e in EXAMPLES])
def test_each_kind_in_each_language_is_one_whole_fact(message, fact, kind):
    facts = {f.text: f.kind for f in extract_facts([message])}
    assert facts.get(fact) == kind, facts
    # Nothing of it is found a second time in pieces ("12.380" of "12.380,50 €").
    assert not [t for t in facts if t != fact and t in fact], facts


@pytest.mark.parametrize(("message", "fact", "kind"), EXAMPLES, ids=[e[1] for e in EXAMPLES])
def test_a_summary_that_dropped_it_gets_it_back_whole(message, fact, kind):
    checked = check_key_facts("The user gave some details.", [message])
    assert fact in checked.appended


@pytest.mark.parametrize(
    "message",
    [
        "The database primary answers on 10.42.7.19.",  # an address, not a German date
        "Production still runs release v2.14.3 of the scheduler.",
        "Growth was 12.5% and the median latency 3.2 ms.",
        "The invoice DE12 3456 7890 1234 5678 90 looks wrong.",  # fails the IBAN checksum
        "Die Straße ist gesperrt, die Nummer ist unbekannt.",
    ],
)
def test_what_is_not_a_language_fact(message):
    assert [(f.kind, f.value) for f in locale_facts(message)] == []


def test_every_language_has_its_own_table():
    assert {"all", "de", "en", "zh"} <= set(language_facts())
    for rows in language_facts().values():
        assert all(isinstance(kind, str) and weight > 0 for kind, weight, *_ in rows)


# French, Spanish, Japanese and Russian: (a real-looking message, the fact, its kind).
EXAMPLES_FR_ES_JA_RU = [
    # French
    ("La livraison part le 7 décembre 2026, pas avant.", "7 décembre 2026", "date"),
    ("La réunion est le 1er mars 2027 au siège.", "1er mars 2027", "date"),
    ("Le rendez-vous est fixé à 14h30 demain.", "14h30", "time"),
    ("Le rendez-vous est lundi, au bureau.", "lundi", "date"),
    ("Le total est de 1 234,56 € TTC.", "1 234,56 €", "money"),
    ("Le total est de 1\u202f234,56 € TTC.", "1\u202f234,56 €", "money"),
    ("La facture fait 3 400 euros, hors taxes.", "3 400 euros", "money"),
    (
        "L'adresse est 12 rue de la Paix, 75002 Paris, au troisième.",
        "12 rue de la Paix, 75002 Paris",
        "address",
    ),
    ("Le contact est Mme Claire Dubois, au service achats.", "Mme Claire Dubois", "name"),
    ("Le responsable chez eux est José García depuis mai.", "José García", "name"),
    ("Le livre a l'ISBN 978-2-07-036822-8, édition de poche.", "978-2-07-036822-8", "identifier"),
    # Spanish
    ("El pago vence el 7 de diciembre de 2026 sin falta.", "7 de diciembre de 2026", "date"),
    ("El lunes llega el camión con la mercancía.", "lunes", "date"),
    ("El importe total es de 12.250,00 € con IVA.", "12.250,00 €", "money"),
    (
        "La oficina está en Calle Mayor 15, 28013 Madrid, segunda planta.",
        "Calle Mayor 15, 28013 Madrid",
        "address",
    ),
    ("Hable con Sra. Ana López mañana por la mañana.", "Sra. Ana López", "name"),
    # Japanese
    ("注文番号はJP-20261207-0042です。", "JP-20261207-0042", "identifier"),
    ("納品は2026年12月7日です。", "2026年12月7日", "date"),
    ("定例会議は月曜日です。", "月曜日", "date"),
    ("会議は午後3時半から始めます。", "午後3時半", "time"),
    ("見積もりの金額は12,000円です。", "12,000円", "amount"),
    ("予算は50万円までです。", "50万円", "amount"),
    ("住所は東京都千代田区丸の内1-9-2です。", "東京都千代田区丸の内1-9-2", "address"),
    ("担当は山田太郎さんです。", "山田太郎", "name"),
    # Russian
    ("Оплата до 7 декабря 2026 г., пожалуйста.", "7 декабря 2026", "date"),
    ("Встреча в понедельник в офисе.", "понедельник", "date"),
    ("Итого к оплате 184 500,00 ₽ по счёту.", "184 500,00 ₽", "money"),
    ("Итого к оплате 184\u00a0500,00 ₽ по счёту.", "184\u00a0500,00 ₽", "money"),
    ("Стоимость работ 1 250 000 рублей без НДС.", "1 250 000 рублей", "money"),
    ("Заявка ТП-2026-0412 принята в работу.", "ТП-2026-0412", "identifier"),
    ("Счёт СЧ-40074 оплачен вчера.", "СЧ-40074", "identifier"),
    ("Адрес склада: г. Москва, ул. Тверская, д. 7.", "г. Москва, ул. Тверская, д. 7", "address"),
    ("Менеджер проекта Иван Петров, звоните ему.", "Иван Петров", "name"),
    # Swiss notation
    ("Der Preis ist CHF 1'234.50 netto.", "CHF 1'234.50", "money"),
]


@pytest.mark.parametrize(
    ("message", "fact", "kind"), EXAMPLES_FR_ES_JA_RU, ids=[e[1] for e in EXAMPLES_FR_ES_JA_RU]
)
def test_french_spanish_japanese_russian_facts_are_one_whole_fact_rf_11(message, fact, kind):
    facts = {f.text: f.kind for f in extract_facts([message])}
    assert facts.get(fact) == kind, facts
    assert not [t for t in facts if t != fact and t in fact], facts


@pytest.mark.parametrize(
    ("message", "fact", "kind"), EXAMPLES_FR_ES_JA_RU, ids=[e[1] for e in EXAMPLES_FR_ES_JA_RU]
)
def test_the_key_facts_line_gives_them_back_whole_rf_11(message, fact, kind):
    checked = check_key_facts("The user gave some details.", [message])
    assert fact in checked.appended


def test_a_summary_that_groups_digits_another_way_keeps_the_amount_rf_11():
    # The same amount with a narrow no-break space, a space or none between the groups.
    source = ["Итого к оплате 184 500,00 ₽ по счёту."]
    for written in ("184\u202f500,00 ₽", "184\u00a0500,00 ₽", "184500,00 ₽"):
        assert check_key_facts(f"Сумма: {written}.", source).missing == []


def test_every_language_read_has_a_table_rf_11():
    assert {"fr", "es", "ja", "ru"} <= set(language_facts())


def test_scanning_texts_together_finds_what_each_alone_finds_rs_3():
    texts = [message for message, _, _ in EXAMPLES + EXAMPLES_FR_ES_JA_RU]
    together = locale_facts_of(texts)
    assert together == [locale_facts_of([text])[0] for text in texts]
    assert together == [
        [(f.start, f.end, f.kind, f.value, f.weight) for f in locale_facts(text)] for text in texts
    ]


def test_a_row_led_by_words_needs_one_of_them_rf_12():
    """RF.12: a row that starts with a group of words is not run over texts that hold
    none of them (what a pattern's leading words are: tests/.../test_patterntext.py)."""
    assert ("Calle", "C/", "Avenida") == next(
        row.needs[:3] for row in _tables().rows if row.needs[:1] == ("Calle",)
    )


_WORD_PIECES = [
    "Dr. ", "Dr.", "Herr Karl Weber", "Frau ", "le 12 ", "du 3er ", "el 14 ", "Calle Mayor 5",
    "Avenida ", "M. Dupont", "Mme Roux", "Sr. Ruiz", "Monday", "January 5, 2027", "г-н Иванов",
    "Понедельник", "воскресенье", "EUR 1.200", "Montag", "Mittwoch", "miércoles", "Dimanche",
    "x", " ", "\n", "1", ".", "-", "Dra", "Mr", "Januar", "Cal", "le", "l",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(_WORD_PIECES), max_size=10).map("".join))
def test_a_row_is_left_out_only_where_it_cannot_match_rf_12(text):
    """RF.12: the words a row needs are a true condition: where its pattern matches, one
    of them is in the text (ASCII and Unicode tables alike)."""
    for plain_ascii in (False, True):
        for row in _tables(plain_ascii).rows:
            if row.needs and row.pattern.search(text):
                assert any(word in text for word in row.needs), (row.pattern.pattern, text)


# Pieces of all eight languages' facts and of what is near one (digit runs with every
# neighbour a row looks at: separators, units, months, street words, line breaks).
_DIGIT_PIECES = [
    *[message for message, _, _ in EXAMPLES + EXAMPLES_FR_ES_JA_RU],
    *["1", "12", "978", "2027", "0421", "1.234", ",50", "'450", "\u202f", "\u00a0", " ", "\n"],
    *[".", ",", "-", "/", ":", "%", "€", "$", "¥", "₽", "EUR ", " EUR", "CHF", " Stück", " t"],
    *["er ", "st ", " de ", " h ", "h", " März", " mars", " marzo", " March", " декабря"],
    *["le ", "du ", "el ", "del ", "Musterstraße ", " rue ", " Street", "Calle Mayor ", "DE"],
    *["日", "月", "年", "円", "万", "号", "公斤", " euros", " рублей", "ТП-", "x", "Ab", "\x00"],
]


@settings(max_examples=400, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(_DIGIT_PIECES), max_size=12).map("".join), max_size=4)
)
def test_the_lines_read_for_digits_lose_no_fact_rf_12(texts):
    """RF.12: the rows whose facts hold digits read only the lines a run of digits they
    need is on; they find there exactly what every row finds over whole texts."""
    assert locale_facts_of(texts) == locale_facts_of(texts, windowed=False)


# The phone candidates as the pattern was first written (the look-back first): the engine
# tried it at every character.
_PHONE_REFERENCE = re.compile(
    r"(?<![A-Za-z0-9_+.,/-])(?:\+\d{1,3}[ \u00a0-]?(?:\(0?\d{1,5}\)[ \u00a0-]?)?\d{1,5}"
    r"|\(0\d{1,5}\)[ \u00a0]?\d{2,5}|0\d{1,5}|1[3-9]\d)"
    r"(?:[ \u00a0/-]?\d{2,8}){1,4}(?![\w.,/-]?\d)"
)
_PHONE_PIECES = ["+", "(", ")", "0", "1", "3", "49", "030", "2345", "139", " ", "\u00a0", "-"]
_PHONE_PIECES += ["/", ".", ",", "a", "_", "\n", "+49 30 901820", "(030) 2345 6789", "x0"]


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.sampled_from(_PHONE_PIECES), max_size=14).map("".join))
def test_phone_candidates_led_by_their_first_character_are_the_same_rf_12(text):
    """RF.12: the phone candidates, each alternative led by its first character (the
    engine stops only there), are those of the pattern led by its look-back."""
    found = [m.span() for m in factlang._PHONE_CANDIDATE.finditer(text)]
    assert found == [m.span() for m in _PHONE_REFERENCE.finditer(text)]
