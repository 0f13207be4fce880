"""bench/fidelity.py's second conversation: a trade fair in Shanghai planned from Berlin, in
German, English and Chinese (not a benchmark itself). 50 facts: amounts in German and
Chinese notation, IBAN and BIC, phone numbers, postal addresses, dates in the three
languages' formats, CJK amounts, names; seven corrections; a 20,000-character export with
one note in it; an assistant's hotel table; logs in Chinese; near-duplicate ids.
"""

from __future__ import annotations

import random

from _fidelity_build import Conversation, Correction, build, export_paste, log_paste, table_answer

FACTS: list[tuple[str, str, str]] = [
    ("12.380,50 €", "Das Angebot für den Messestand liegt bei 12.380,50 € netto.", "Messestand"),
    (
        "DE89 3704 0044 0532 0130 00",
        "Bitte überweise die Anzahlung auf DE89 3704 0044 0532 0130 00.",
        "Anzahlung",
    ),
    ("COBADEFFXXX", "Die BIC der Bank ist COBADEFFXXX.", "BIC"),
    ("+49 30 901820", "Die Zentrale in Berlin erreichst du unter +49 30 901820.", "Zentrale"),
    (
        "Musterstraße 12, 10115 Berlin",
        "Die Lieferadresse ist Musterstraße 12, 10115 Berlin.",
        "Lieferadresse",
    ),
    ("北京市朝阳区建国路88号", "样品请寄到北京市朝阳区建国路88号。", "样品"),
    ("3万5千元", "展台搭建费是3万5千元。", "搭建费"),
    ("1.2亿", "去年展会的总成交额是1.2亿。", "成交额"),
    ("¥12,000", "The Shanghai hotel block costs ¥12,000 for the whole team.", "block"),
    ("1.234.567", "Die Besucherzahl der letzten Messe war 1.234.567.", "Besucherzahl"),
    ("王芳", "上海展会的对接人是王芳。", "对接人"),
    (
        "Dr. Katrin Vogel",
        "Unsere Ansprechpartnerin bei der Messe ist Dr. Katrin Vogel.",
        "Ansprechpartnerin",
    ),
    ("2027年3月15日", "展会开幕日期是2027年3月15日。", "开幕"),
    ("14.03.2027", "Der Aufbau beginnt am 14.03.2027.", "Aufbau"),
    ("March 18, 2027", "The press breakfast is on March 18, 2027.", "breakfast"),
    ("+86 138 0013 8000", "王芳的手机号是 +86 138 0013 8000。", "手机号"),
    ("B2-17", "展位号改为 B2-17。", "展位号"),
    ("41,500", "The marketing budget is 41,500, not 38,000.", "marketing"),
    (
        "Mittwoch",
        "Das Abschlussgespräch ist nicht am Dienstag, sondern am Mittwoch.",
        "Abschlussgespräch",
    ),
    ("4,8 t", "Das Standgewicht beträgt 4,8 t.", "Standgewicht"),
    ("1.250,00 EUR", "Die Kaution für die Fläche beträgt 1.250,00 EUR.", "Kaution"),
    ("DE123456789", "Unsere USt-IdNr. ist DE123456789.", "USt"),
    ("上海市浦东新区龙阳路2345号", "展馆地址是上海市浦东新区龙阳路2345号。", "展馆"),
    ("陈建国", "搭建公司的负责人叫陈建国。", "负责人"),
    ("15:30", "Die Pressekonferenz beginnt um 15:30 Uhr.", "Pressekonferenz"),
    ("2.500 Stück", "Wir drucken 2.500 Stück Flyer.", "Flyer"),
    ("$8,750.00", "The booth furniture rental is $8,750.00.", "furniture"),
    ("+1 415 555 0132", "Our US partner's direct line is +1 415 555 0132.", "partner"),
    (
        "Hauptstraße 5, 80331 München",
        "Korrektur: das Lager ist in der Hauptstraße 5, 80331 München.",
        "Lager",
    ),
    ("FX-2027-0415", "The freight booking for the stand is FX-2027-0415.", "freight"),
    ("8,5 %", "Der Frühbucherrabatt beträgt 8,5 %.", "Frühbucherrabatt"),
    ("2800元", "每天的翻译费是2800元。", "翻译费"),
    ("2027-02-28", "Early-bird registration closes 2027-02-28.", "registration"),
    ("30. April 2027", "Die Ausstellerversicherung läuft am 30. April 2027 aus.", "Versicherung"),
    (
        "https://messe.example.cn/plan/hall-4",
        "The floor plan is at https://messe.example.cn/plan/hall-4.",
        "floor",
    ),
    ("jonas.weber@example.de", "Schick die Unterlagen an jonas.weber@example.de.", "Unterlagen"),
    ("Maximilian Schröder", "Maximilian Schröder übernimmt die Standbetreuung.", "Standbetreuung"),
    ("160公斤", "每箱限重改为160公斤。", "限重"),
    ("19 %", "Auf die Standmiete kommen 19 % MwSt.", "Standmiete"),
    ("0421 3344556", "Das Büro in Bremen hat die Nummer 0421 3344556.", "Bremen"),
    ("CN-SH-77812", "报关编号是 CN-SH-77812。", "报关编号"),
    ("6 Paletten", "Wir verschicken insgesamt 6 Paletten Material.", "Material"),
    ("08:45", "The stand crew meets at 08:45 every morning.", "crew"),
    ("¥4,600", "Update: the interpreter is ¥4,600 per day, not ¥3,900.", "interpreter"),
    ("Lena Hoffmann", "Lena Hoffmann aus dem Vertrieb kommt mit nach Shanghai.", "Vertrieb"),
    ("张伟", "我们的海关代理是张伟。", "海关代理"),
    ("2027年3月21日", "撤展截止时间改为2027年3月21日。", "撤展"),
    ("¥1,180", "", "Jinjiang"),  # in the assistant's hotel table
    ("Code 4471", "", "Ersatzschlüssel"),  # one line of the pasted export
    ("陆家嘴", "团队晚宴定在陆家嘴。", "晚宴"),
]

CORRECTIONS = [
    Correction("B1-05", "B2-17", "展位号是 B1-05。"),
    Correction("38,000", "41,500", "The marketing budget is 38,000."),
    Correction("Dienstag", "Mittwoch", "Das Abschlussgespräch ist am Dienstag."),
    Correction(
        "Hauptstraße 3, 80331 München",
        "Hauptstraße 5, 80331 München",
        "Das Lager ist in der Hauptstraße 3, 80331 München.",
    ),
    Correction("120公斤", "160公斤", "每箱限重120公斤。"),
    Correction("¥3,900", "¥4,600", "The interpreter costs ¥3,900 per day."),
    Correction("2027年3月20日", "2027年3月21日", "撤展截止时间是2027年3月20日。"),
]

AVOID = tuple(value for value, _, _ in FACTS) + tuple(c.old for c in CORRECTIONS)

TOPICS = ["den Standaufbau", "the travel plan", "展会物流", "die Pressearbeit", "the budget review"]


def _hotel(rng: random.Random, i: int) -> str:
    return (
        f"| Hotel {chr(65 + i % 26)}{i} | {rng.randint(10, 999)} Nanjing Road | "
        f"¥{rng.randint(6, 19)}{rng.randint(1, 9)}5 | {rng.randint(2, 30)} rooms |"
    )


def conversation(count: int = 200) -> Conversation:
    rng = random.Random(23)
    hotels = table_answer(
        rng,
        60,
        "| Hotel | Address | Price per night | Rooms left |",
        _hotel,
        "| Jinjiang Tower | 161 Changle Road | ¥1,180 | 12 rooms |",
    )
    note = "Notiz: Ersatzschlüssel liegt beim Pförtner, Code 4471"
    pastes = {
        20: "Hier der Lagerexport:\n" + export_paste(rng, 20_000, "FX", note, AVOID),
        55: "系统日志如下：\n" + log_paste(rng, 8_000),
        90: "Second export:\n" + export_paste(rng, 12_000, "FX", avoid=AVOID),
        140: "Log von gestern:\n" + log_paste(rng, 20_000),
        175: "Export Lager B:\n" + export_paste(rng, 6_000, "FX", avoid=AVOID),
    }
    tables = {70: ("Please list the hotel options near the venue as a table.", hotels)}
    out = Conversation("fair", FACTS, CORRECTIONS)
    out.turns = build(out, topics=TOPICS, pastes=pastes, tables=tables, count=count, seed=7)
    return out
