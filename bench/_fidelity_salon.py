"""bench/fidelity.py's fourth conversation: a trade show in Lyon and a showroom in Madrid,
planned in French and Spanish with some English (not a benchmark itself). 50 facts:
French and Spanish dates (7 décembre 2026, 7 de diciembre de 2026, weekdays),
amounts with spaces, narrow no-break spaces and dots as group separators, French and
Spanish addresses and names, a hyphenated ISBN, IBAN/BIC, phone numbers; seven
corrections in French and Spanish ("au lieu de", "en vez de", "y no", "pas");
a 20,000-character export with one note in it, an assistant's table, logs.
"""

from __future__ import annotations

import random

from _fidelity_build import Conversation, Correction, build, export_paste, log_paste, table_answer

FACTS: list[tuple[str, str, str]] = [
    ("7 décembre 2026", "Le salon ouvre ses portes le 7 décembre 2026.", "salon"),
    ("1 234,56 €", "La location des cloisons coûte 1 234,56 € TTC.", "cloisons"),
    ("18\u202f900,00 €", "Le budget du stand est de 18\u202f900,00 € hors taxes.", "stand"),
    (
        "12 rue de la Paix, 75002 Paris",
        "Le siège est au 12 rue de la Paix, 75002 Paris.",
        "siège",
    ),
    (
        "45 avenue Jean Jaurès, 69007 Lyon",
        "Le dépôt se trouve au 45 avenue Jean Jaurès, 69007 Lyon.",
        "dépôt",
    ),
    ("Mme Claire Dubois", "Notre interlocutrice au salon est Mme Claire Dubois.", "interlocutrice"),
    ("Antoine Lefèvre", "Antoine Lefèvre gère la logistique sur place.", "logistique"),
    ("+33 1 42 68 53 00", "Le standard de Paris répond au +33 1 42 68 53 00.", "standard"),
    (
        "FR76 3000 6000 0112 3456 7890 189",
        "Le virement de l'acompte va sur FR76 3000 6000 0112 3456 7890 189.",
        "acompte",
    ),
    ("BNPAFRPPXXX", "Le BIC de la banque est BNPAFRPPXXX.", "banque"),
    ("14h30", "La conférence de presse commence à 14h30.", "conférence"),
    ("mercredi", "Le démontage n'est pas mardi, il est mercredi.", "démontage"),
    ("18h45", "Le cocktail des exposants est à 18h45 au lieu de 18h15.", "cocktail"),
    ("978-2-07-036822-8", "Le catalogue a l'ISBN 978-2-07-036822-8.", "catalogue"),
    ("3 400 euros", "L'assurance du matériel coûte 3 400 euros par an.", "assurance"),
    ("SAL-2026-0871", "Notre numéro d'exposant est SAL-2026-0871.", "exposant"),
    ("B-412", "Notre emplacement porte le numéro B-412.", "emplacement"),
    ("8 %", "La remise fidélité est de 8 %.", "fidélité"),
    (
        "2 février 2027",
        "Correction : la facture finale est due le 2 février 2027 au lieu du 26 janvier 2027.",
        "facture",
    ),
    ("26\u202f500,00 €", "Le devis du traiteur est désormais de 26\u202f500,00 €.", "traiteur"),
    ("7 de diciembre de 2026", "El showroom de Madrid abre el 7 de diciembre de 2026.", "showroom"),
    ("12.250,00 €", "El alquiler del local es de 12.250,00 € al mes.", "alquiler"),
    (
        "Calle Mayor 15, 28013 Madrid",
        "El showroom está en Calle Mayor 15, 28013 Madrid.",
        "Madrid",
    ),
    (
        "Paseo de Gracia 21, 08007 Barcelona",
        "El almacén está en Paseo de Gracia 21, 08007 Barcelona.",
        "almacén",
    ),
    ("Sra. Ana López", "La arquitecta del proyecto es Sra. Ana López.", "arquitecta"),
    ("José García", "José García lleva las obras del local.", "obras"),
    ("+34 912 345 678", "La oficina de Madrid atiende en el +34 912 345 678.", "oficina"),
    (
        "ES91 2100 0418 4502 0005 1332",
        "La fianza se paga en ES91 2100 0418 4502 0005 1332.",
        "fianza",
    ),
    ("jueves", "La inauguración no es el miércoles sino el jueves.", "inauguración"),
    ("11:40", "La visita de prensa es a las 11:40 y no a las 11:10.", "prensa"),
    ("4.500 unidades", "Pedimos 4.500 unidades de folletos.", "folletos"),
    ("PED-2026-3310", "El número de pedido del mobiliario es PED-2026-3310.", "mobiliario"),
    ("21 %", "Al alquiler se le suma un 21 % de IVA.", "IVA"),
    (
        "9 de enero de 2027",
        "Corrección: la entrega de llaves es el 9 de enero de 2027, en vez del 8 de enero de 2027.",
        "llaves",
    ),
    ("1.980,00 €", "El seguro del showroom es ahora de 1.980,00 €.", "seguro"),
    ("10:15", "The Madrid team call is at 10:15 every Monday.", "team call"),
    ("$6,400.00", "The US buyer's deposit is $6,400.00.", "buyer"),
    (
        "https://salon.example.fr/plan/hall-4",
        "Le plan est sur https://salon.example.fr/plan/hall-4.",
        "plan",
    ),
    ("claire.dubois@example.fr", "Écrivez à claire.dubois@example.fr pour les badges.", "badges"),
    ("2026-11-30", "Badge registration closes 2026-11-30.", "registration"),
    ("EXP-77812", "El código de aduana es EXP-77812.", "aduana"),
    ("lundi", "Le montage commence lundi.", "montage"),
    ("320 m²", "La surface du stand est de 320 m².", "surface"),
    ("sábado", "El evento para clientes es el sábado.", "clientes"),
    ("Sr. Javier Ortega", "El contacto del banco es Sr. Javier Ortega.", "contacto"),
    ("Sophie Martin", "Sophie Martin s'occupe des invitations.", "invitations"),
    ("Lyon Part-Dieu", "On arrive en train à Lyon Part-Dieu.", "train"),
    ("1\u202f180 €", "", "Hôtel Carlton"),  # in the assistant's hotel table
    ("Code 5582", "", "badge perdu"),  # one line of the pasted export
    ("Carlos Ruiz", "Carlos Ruiz viene desde Sevilla para el montaje.", "Sevilla"),
]

CORRECTIONS = [
    Correction("mardi", "mercredi", "Le démontage est mardi."),
    Correction("18h15", "18h45", "Le cocktail des exposants est à 18h15."),
    Correction(
        "26 janvier 2027", "2 février 2027", "La facture finale est due le 26 janvier 2027."
    ),
    Correction(
        "24\u202f800,00 €", "26\u202f500,00 €", "Le devis du traiteur est de 24\u202f800,00 €."
    ),
    Correction("miércoles", "jueves", "La inauguración es el miércoles."),
    Correction("11:10", "11:40", "La visita de prensa es a las 11:10."),
    Correction(
        "8 de enero de 2027", "9 de enero de 2027", "La entrega de llaves es el 8 de enero de 2027."
    ),
    Correction("1.750,00 €", "1.980,00 €", "El seguro del showroom es de 1.750,00 €."),
]

AVOID = tuple(value for value, _, _ in FACTS) + tuple(c.old for c in CORRECTIONS)

TOPICS = ["le montage du stand", "la logística", "the travel plan", "el showroom", "la presse"]


def _hotel(rng: random.Random, i: int) -> str:
    return (
        f"| Hôtel {chr(65 + i % 26)}{i} | {rng.randint(2, 99)} rue Garibaldi | "
        f"{rng.randint(1, 9)}{rng.randint(1, 9)}5 € | {rng.randint(2, 30)} chambres |"
    )


def conversation(count: int = 200) -> Conversation:
    rng = random.Random(41)
    hotels = table_answer(
        rng,
        60,
        "| Hôtel | Adresse | Prix par nuit | Chambres |",
        _hotel,
        "| Hôtel Carlton | 4 rue Jussieu | 1\u202f180 € | 6 chambres |",
    )
    note = "Note : badge perdu signalé à l'accueil, Code 5582"
    pastes = {
        25: "Voici l'export du stock :\n" + export_paste(rng, 20_000, "SAL", note, AVOID),
        60: "Registro del sistema:\n" + log_paste(rng, 8_000),
        95: "Second export:\n" + export_paste(rng, 12_000, "SAL", avoid=AVOID),
        145: "Journal d'hier :\n" + log_paste(rng, 20_000),
        180: "Export almacén:\n" + export_paste(rng, 6_000, "SAL", avoid=AVOID),
    }
    tables = {75: ("Peux-tu me lister les hôtels près du salon sous forme de tableau ?", hotels)}
    out = Conversation("salon", FACTS, CORRECTIONS)
    out.turns = build(out, topics=TOPICS, pastes=pastes, tables=tables, count=count, seed=17)
    return out
