"""bench/fidelity.py's third conversation: an office move and a supplier contract, in
English, Chinese and German (not a benchmark itself). 50 facts of other values and in
other formats than the second conversation's: unspaced IBAN, UK and Chinese phone numbers,
English, German and Chinese addresses, slashed and written-out dates, CJK amounts with
亿/万/千, names of the three languages; six corrections; a 20,000-character export; an
assistant's price table; logs.
"""

from __future__ import annotations

import random

from _fidelity_build import Conversation, Correction, build, export_paste, log_paste, table_answer

FACTS: list[tuple[str, str, str]] = [
    ("GB29NWBK60161331926819", "The landlord's IBAN is GB29NWBK60161331926819.", "landlord"),
    ("DEUTDEFF500", "Für die Kaution nutzen wir die BIC DEUTDEFF500.", "Kaution"),
    ("+44 20 7946 0958", "The London office number is +44 20 7946 0958.", "London"),
    ("+86 10 6552 9988", "北京办公室的电话是 +86 10 6552 9988。", "北京办公室"),
    (
        "(030) 2345 6789",
        "Neue Nummer: der Hausmeister ist jetzt unter (030) 2345 6789 erreichbar.",
        "Hausmeister",
    ),
    (
        "221B Baker Street, London NW1 6XE",
        "Invoices go to 221B Baker Street, London NW1 6XE.",
        "Invoices",
    ),
    (
        "Friedrichstraße 123, 10117 Berlin",
        "Das neue Büro ist in der Friedrichstraße 123, 10117 Berlin.",
        "Büro",
    ),
    ("上海市静安区南京西路1266号", "新办公室在上海市静安区南京西路1266号。", "新办公室"),
    ("2亿3千万", "集团今年的采购总额是2亿3千万。", "采购总额"),
    ("8千5百元", "每个工位的家具预算是8千5百元。", "家具"),
    ("4.5万", "搬家公司的报价更新为4.5万。", "搬家公司"),
    ("£1,299.99", "The standing desks cost £1,299.99 each.", "desks"),
    ("CHF 2’450.00", "Die Schweizer Lizenz kostet CHF 2’450.00 im Jahr.", "Lizenz"),
    ("€ 3.400", "Die Umzugsversicherung kostet € 3.400.", "Umzugsversicherung"),
    ("1. Juli 2027", "Der Mietvertrag beginnt am 1. Juli 2027.", "Mietvertrag"),
    ("July 4, 2027", "Movers arrive on July 4, 2027.", "Movers"),
    ("2027/07/09", "IT cutover is scheduled for 2027/07/09.", "cutover"),
    ("7月12日", "乔迁仪式定在7月12日。", "乔迁"),
    ("刘洋", "新办公室的行政主管是刘洋。", "行政主管"),
    ("赵敏", "财务对接人是赵敏。", "财务"),
    ("Annika Brandt", "Annika Brandt koordiniert den Umzug in Berlin.", "koordiniert"),
    ("Oliver Grant", "Oliver Grant signs for the London side.", "signs"),
    ("Sabine Köhler-Wirth", "Die Schlüssel übergibt Sabine Köhler-Wirth.", "Schlüssel"),
    ("LIC-4410-B", "The software licence key id is LIC-4410-B.", "licence"),
    ("320 m²", "Die Bürofläche beträgt 320 m².", "Bürofläche"),
    ("48 people", "We need desks for 48 people on day one.", "desks"),
    ("17:45", "The lift is reserved until 17:45 on moving day.", "lift"),
    ("Raum 4.12", "Der Serverraum ist Raum 4.12.", "Serverraum"),
    ("+49 171 2345678", "Annikas Handy: +49 171 2345678.", "Handy"),
    ("139 1234 5678", "刘洋的手机是139 1234 5678。", "手机"),
    ("SUP-2027-118", "Correction: the supplier contract number is SUP-2027-118.", "supplier"),
    ("net 45", "Payment terms with the supplier are net 45.", "terms"),
    ("2,75 %", "Der Zinssatz für die Finanzierung liegt bei 2,75 %.", "Zinssatz"),
    ("¥56,800", "The new server rack costs ¥56,800.", "rack"),
    ("7.800,00 €", "Die Küche kostet 7.800,00 € inklusive Einbau.", "Küche"),
    (
        "https://intranet.example.com/move/plan",
        "The move plan lives at https://intranet.example.com/move/plan.",
        "move plan",
    ),
    ("facilities@example.co.uk", "Questions to facilities@example.co.uk please.", "Questions"),
    ("5层", "我们租的是5层整层。", "整层"),
    ("24 Monate", "Die Mindestlaufzeit beträgt 24 Monate.", "Mindestlaufzeit"),
    ("Donnerstag", "Die Übergabe ist nicht am Montag, sondern am Donnerstag.", "Übergabe"),
    ("SUP-2027-121", "The cleaning contract is SUP-2027-121.", "cleaning"),
    ("62,000", "The fit-out budget is 62,000, not 55,000.", "fit-out"),
    ("3号门", "货车请走3号门。", "货车"),
    ("2027年6月30日", "旧办公室退租日期改为2027年6月30日。", "退租"),
    ("Kabel Nord GmbH", "Die Verkabelung macht die Kabel Nord GmbH.", "Verkabelung"),
    ("9.6 kW", "The server room needs 9.6 kW of cooling.", "cooling"),
    ("Q3-2027", "Phase two is planned for Q3-2027.", "Phase"),
    ("￥980", "", "Ergonomic"),  # in the assistant's price table
    ("Tor 2", "", "Anlieferung"),  # one line of the pasted export
    ("黄浦江", "年会地点在黄浦江游船上。", "年会"),
]

CORRECTIONS = [
    Correction("Montag", "Donnerstag", "Die Übergabe ist am Montag."),
    Correction("55,000", "62,000", "The fit-out budget is 55,000."),
    Correction("2027年5月31日", "2027年6月30日", "旧办公室退租日期是2027年5月31日。"),
    Correction("SUP-2027-117", "SUP-2027-118", "The supplier contract number is SUP-2027-117."),
    Correction("3.9万", "4.5万", "搬家公司报价3.9万。"),
    Correction("(030) 2345 6788", "(030) 2345 6789", "Der Hausmeister: (030) 2345 6788."),
]

AVOID = tuple(value for value, _, _ in FACTS) + tuple(c.old for c in CORRECTIONS)

TOPICS = ["the move timeline", "die Möblierung", "网络布线", "the supplier review", "den Umzug"]


def _chair(rng: random.Random, i: int) -> str:
    return (
        f"| Chair model {i:02d} | {rng.choice(['mesh', 'leather', 'fabric'])} | "
        f"￥{rng.randint(300, 2999)} | {rng.randint(1, 12)} weeks |"
    )


def conversation(count: int = 200) -> Conversation:
    rng = random.Random(31)
    chairs = table_answer(
        rng,
        70,
        "| Model | Material | Price | Delivery |",
        _chair,
        "| Ergonomic Pro 7 | mesh | ￥980 | 3 weeks |",
    )
    note = "Hinweis: Anlieferung nur über Tor 2, Höhe max. 3,80 m"
    pastes = {
        30: "Inventory export:\n" + export_paste(rng, 20_000, "SUP", note, AVOID),
        65: "Log:\n" + log_paste(rng, 15_000),
        100: "搬家清单导出：\n" + export_paste(rng, 10_000, "SUP", avoid=AVOID),
        150: "Export Möbel:\n" + export_paste(rng, 20_000, "SUP", avoid=AVOID),
        185: "日志：\n" + log_paste(rng, 5_000),
    }
    tables = {80: ("Zeig mir bitte die Stuhlangebote als Tabelle.", chairs)}
    out = Conversation("move", FACTS, CORRECTIONS)
    out.turns = build(out, topics=TOPICS, pastes=pastes, tables=tables, count=count, seed=13)
    return out
