"""bench/fidelity.py's fifth conversation: an export deal between a Moscow distributor and
a Tokyo maker, in Russian and Japanese with some English (not a benchmark itself). 50
facts: Russian and Japanese dates (7 декабря 2026, 2026年12月7日, weekdays), amounts with
no-break spaces as group separators (184 500,00 ₽), yen amounts (12,000円, 50万円),
Cyrillic and Japanese identifiers (ТП-…, СЧ-…, JP-20261207-0042), Russian and Japanese
addresses and names, phone numbers; seven corrections in Russian and Japanese
("вместо", "а не", "ではなく", "に変更"); a 20,000-character export with one note in it, an
assistant's table, logs.
"""

from __future__ import annotations

import random

from _fidelity_build import Conversation, Correction, build, export_paste, log_paste, table_answer

FACTS: list[tuple[str, str, str]] = [
    ("7 декабря 2026", "Отгрузка партии назначена на 7 декабря 2026 г.", "Отгрузка"),
    ("184 500,00 ₽", "Итого к оплате по первому счёту 184 500,00 ₽.", "первому"),
    (
        "1\u00a0250\u00a0000 рублей",
        "Стоимость растаможки 1\u00a0250\u00a0000 рублей.",
        "растаможки",
    ),
    ("ТП-2026-0412", "Номер таможенной заявки ТП-2026-0412.", "таможенной"),
    ("СЧ-40074", "Предоплата идёт по счёту СЧ-40074.", "Предоплата"),
    (
        "г. Москва, ул. Тверская, д. 7",
        "Офис дистрибьютора: г. Москва, ул. Тверская, д. 7.",
        "дистрибьютора",
    ),
    (
        "Невский проспект, 28",
        "Склад в Петербурге находится по адресу Невский проспект, 28.",
        "Петербурге",
    ),
    ("Иван Петров", "Менеджер проекта с их стороны Иван Петров.", "Менеджер"),
    ("Ольга Смирнова", "Договор подписывает Ольга Смирнова.", "подписывает"),
    ("+7 495 123-45-67", "Телефон московского офиса +7 495 123-45-67.", "московского"),
    ("пятница", "Созвон с Токио каждую неделю, день: пятница.", "Созвон"),
    ("14:30", "Приёмка товара в 14:30 по Москве.", "Приёмка"),
    ("12 %", "Скидка за объём составляет 12 %.", "объём"),
    ("9 декабря 2026", "Поправка: оплата до 9 декабря 2026 вместо 5 декабря 2026.", "оплата"),
    ("СЧ-40081", "Второй счёт теперь СЧ-40081, а не СЧ-40079.", "Второй"),
    ("96 300,00 ₽", "Поправка: страховка груза стоит 96 300,00 ₽.", "страховка"),
    ("ТП-2026-0419", "Заявка на сертификат теперь ТП-2026-0419.", "сертификат"),
    ("4 800 шт.", "В первой партии 4 800 шт.", "партии"),
    ("RU-MSK-5521", "Код поставщика в системе RU-MSK-5521.", "поставщика"),
    ("dostavka@example.ru", "Документы на почту dostavka@example.ru.", "Документы"),
    ("JP-20261207-0042", "注文番号はJP-20261207-0042です。", "注文番号"),
    ("2026年12月7日", "工場からの出荷は2026年12月7日です。", "出荷"),
    ("12,000円", "サンプル一個の価格は12,000円です。", "サンプル"),
    ("50万円", "検査費用は50万円までです。", "検査費用"),
    ("東京都千代田区丸の内1-9-2", "本社の住所は東京都千代田区丸の内1-9-2です。", "本社"),
    (
        "大阪府大阪市北区梅田3丁目1番1号",
        "倉庫は大阪府大阪市北区梅田3丁目1番1号にあります。",
        "倉庫",
    ),
    ("山田太郎", "先方の担当は山田太郎さんです。", "担当"),
    ("佐藤花子", "品質管理は佐藤花子さんが見ます。", "品質管理"),
    ("+81 3 1234 5678", "東京オフィスの電話は +81 3 1234 5678 です。", "東京オフィス"),
    ("月曜日", "定例会議は月曜日です。", "定例会議"),
    ("午後3時半", "工場見学は午後3時半からです。", "工場見学"),
    ("2026年12月14日", "検品日は2026年12月11日ではなく2026年12月14日です。", "検品日"),
    ("JP-20261207-0051", "請求番号はJP-20261207-0051に変更になりました。", "請求番号"),
    ("38万円", "輸送費は38万円に変更です。", "輸送費"),
    ("KX-7781", "型番は KX-7781 です。", "型番"),
    ("1,200台", "初回ロットは1,200台です。", "初回ロット"),
    (
        "https://factory.example.jp/spec/kx-7781",
        "The spec sheet is at https://factory.example.jp/spec/kx-7781.",
        "spec",
    ),
    ("yamada@example.jp", "Send the drawings to yamada@example.jp.", "drawings"),
    ("2026-11-20", "The letter of credit must be opened by 2026-11-20.", "credit"),
    ("$48,250.00", "The freight forwarder quotes $48,250.00.", "forwarder"),
    ("MAEUJPJTXXX", "The Tokyo bank's BIC is MAEUJPJTXXX.", "Tokyo bank"),
    ("FX-JP-3321", "The forwarder's booking is FX-JP-3321.", "booking"),
    ("18 kg", "Each carton weighs 18 kg.", "carton"),
    ("Анна Кузнецова", "Переводчик на встречах Анна Кузнецова.", "Переводчик"),
    ("воскресенье", "Склад не работает в воскресенье.", "работает"),
    ("12345678", "Реквизиты: ОКПО 12345678.", "ОКПО"),
    ("￥980", "", "Hotel Sakura"),  # in the assistant's hotel table
    ("Code 9917", "", "запасной ключ"),  # one line of the pasted export
    ("鈴木一郎", "通関の担当は鈴木一郎さんです。", "通関"),
    ("20 декабря 2026", "Контейнер прибывает в порт 20 декабря 2026.", "Контейнер"),
]

CORRECTIONS = [
    Correction("5 декабря 2026", "9 декабря 2026", "Оплата до 5 декабря 2026."),
    Correction("СЧ-40079", "СЧ-40081", "Второй счёт СЧ-40079."),
    Correction("88 900,00 ₽", "96 300,00 ₽", "Страховка груза стоит 88 900,00 ₽."),
    Correction("ТП-2026-0415", "ТП-2026-0419", "Заявка на сертификат ТП-2026-0415."),
    Correction("2026年12月11日", "2026年12月14日", "検品日は2026年12月11日です。"),
    Correction("JP-20261207-0047", "JP-20261207-0051", "請求番号はJP-20261207-0047です。"),
    Correction("32万円", "38万円", "輸送費は32万円です。"),
]

AVOID = tuple(value for value, _, _ in FACTS) + tuple(c.old for c in CORRECTIONS)

TOPICS = ["отгрузку", "the customs papers", "出荷の準備", "the letter of credit", "склад"]


def _hotel(rng: random.Random, i: int) -> str:
    return (
        f"| Hotel {chr(65 + i % 26)}{i} | {rng.randint(1, 9)}-{rng.randint(1, 30)} Ginza | "
        f"￥{rng.randint(6, 19)}{rng.randint(1, 9)}5 | {rng.randint(2, 30)} rooms |"
    )


def conversation(count: int = 200) -> Conversation:
    rng = random.Random(53)
    hotels = table_answer(
        rng,
        60,
        "| Hotel | Address | Price per night | Rooms left |",
        _hotel,
        "| Hotel Sakura | 2-4 Yaesu | ￥980 | 9 rooms |",
    )
    note = "Примечание: запасной ключ у охраны, Code 9917"
    pastes = {
        22: "Выгрузка склада:\n" + export_paste(rng, 20_000, "SK", note, AVOID),
        58: "システムログ：\n" + log_paste(rng, 8_000),
        92: "Вторая выгрузка:\n" + export_paste(rng, 12_000, "SK", avoid=AVOID),
        142: "Log:\n" + log_paste(rng, 20_000),
        178: "在庫エクスポート:\n" + export_paste(rng, 6_000, "SK", avoid=AVOID),
    }
    tables = {72: ("Please list the hotels near the factory as a table.", hotels)}
    out = Conversation("export", FACTS, CORRECTIONS)
    out.turns = build(out, topics=TOPICS, pastes=pastes, tables=tables, count=count, seed=19)
    return out
