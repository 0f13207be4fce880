"""Recall quality with crowded keys: the conversations of ``bench/search.py --quality``.

One conversation per language (English, German, Chinese, French, Japanese). Each holds
four keys; each key is named by 20 filler messages that state no value ("Did the translator
confirm?") and by one that states its value, in one of three ways:

- ``plain``: a message stating the value next to the key;
- ``reply``: the assistant asks for it ("Your EORI number?") and the user answers with the
  value alone, so the answer holds no word of the key;
- ``long``: a message of about 1,200 characters that names the key in passing near its
  start and states the value near its end, past a 600-character quote around the first
  mention.

``recall`` is then asked for each key by the key word alone (limit 5, as the agent's tool
asks); the figure is the place of the first passage that quotes the value (1 = first),
or "not found" when no passage quotes it.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

FILLERS_PER_KEY = 20


@dataclass(frozen=True)
class Key:
    word: str  # what recall is asked for
    value: str  # what the value-stating message holds
    way: str  # plain, reply or long
    statement: str  # the value-stating text ({v} is the value); for "reply", the question


@dataclass(frozen=True)
class Language:
    code: str
    keys: tuple[Key, ...]
    fillers: tuple[str, ...]  # "{k}" is the key word, "{t}" a topic
    topics: tuple[str, ...]
    padding: tuple[str, ...]  # sentences without keys or values, for long messages


LANGUAGES = (
    Language(
        "en",
        (
            Key("translator", "+49 30 9018 2277", "plain",
                "The translator's direct line is {v}, best before noon."),
            Key("EORI", "DE884123456789012", "reply", "Your EORI number, please?"),
            Key("sample", "SMP-4471-B", "long", "The sample we keep is labelled {v}."),
            Key("invoice", "€12,480.50", "plain", "The final invoice comes to {v} incl. VAT."),
        ),
        (
            "Did the {k} confirm the {t}?", "We should ask the {k} about the {t} again.",
            "Is the {k} still fine with the {t}?", "The {k} has not replied about the {t} yet.",
            "Please remind me to check the {k} before the {t}.",
            "Who talked to the {k} about the {t}?", "The {k} question for the {t} is open.",
            "Let's leave the {k} out of the {t} for now.",
            "I am not sure the {k} matters for the {t}.",
            "Could you summarise what we know about the {k} and the {t}?",
        ),
        ("schedule", "budget", "kickoff", "contract", "review", "workshop", "launch",
         "handover", "audit", "roadmap"),
        (
            "We walked through the agenda once more and agreed on the order of the talks.",
            "Lunch is planned for the courtyard if the weather allows it.",
            "The team would like a short break between the two sessions.",
            "Nobody objected to moving the retrospective to the afternoon.",
            "The slides will be shared after the meeting, not before.",
        ),
    ),
    Language(
        "de",
        (
            Key("Übersetzerin", "+49 89 2180 7731", "plain",
                "Die Übersetzerin erreichen Sie direkt unter {v}."),
            Key("EORI", "DE771204938811000", "reply", "Wie lautet Ihre EORI-Nummer?"),
            Key("Probe", "PR-2291-K", "long", "Die Probe, die wir behalten, trägt die Nummer {v}."),
            Key("Rechnung", "12.480,50 €", "plain",
                "Die Rechnung beläuft sich auf {v} inklusive Mehrwertsteuer."),
        ),
        (
            "Hat die {k} den {t} schon bestätigt?",
            "Wir sollten wegen der {k} und dem {t} nachfragen.",
            "Ist die {k} für den {t} noch wichtig?", "Zur {k} gibt es beim {t} nichts Neues.",
            "Bitte denk an die {k}, bevor der {t} beginnt.",
            "Wer hat mit der {k} über den {t} gesprochen?",
            "Die Frage der {k} für den {t} ist noch offen.",
            "Lassen wir die {k} beim {t} erst einmal außen vor.",
            "Ich weiß nicht, ob die {k} für den {t} zählt.",
            "Fass bitte zusammen, was wir über die {k} und den {t} wissen.",
        ),
        ("Termin", "Vertrag", "Workshop", "Start", "Abschluss", "Rundgang", "Bericht",
         "Auftrag", "Plan", "Test"),
        (
            "Wir sind die Tagesordnung noch einmal durchgegangen und haben die Reihenfolge "
            "festgelegt.",
            "Das Mittagessen findet im Hof statt, wenn das Wetter mitspielt.",
            "Das Team wünscht sich eine kurze Pause zwischen den beiden Runden.",
            "Niemand hatte etwas dagegen, die Rückschau auf den Nachmittag zu legen.",
            "Die Folien werden nach dem Treffen verteilt, nicht vorher.",
        ),
    ),
    Language(
        "zh",
        (
            Key("翻译", "138 1234 5678", "plain", "翻译的手机号是{v}，上午联系最好。"),
            Key("EORI", "CN551200938811", "reply", "您的EORI编号是多少？"),
            Key("样品", "YP-2231-C", "long", "我们留下的样品编号是{v}。"),
            Key("发票", "12,480.50元", "plain", "最终发票金额为{v}，含税。"),
        ),
        (
            "{k}确认{t}了吗？", "我们应该再问问{k}关于{t}的事。", "{k}对{t}还满意吗？",
            "{k}还没有回复{t}的事情。", "{t}之前请提醒我检查{k}。", "谁和{k}谈过{t}？",
            "{t}的{k}问题还没解决。", "{t}暂时先不考虑{k}。", "我不确定{k}对{t}重要不重要。",
            "请总结一下我们对{k}和{t}的了解。",
        ),
        ("日程", "预算", "合同", "评审", "培训", "发布", "交接", "审计", "路线图", "会议"),
        (
            "我们又过了一遍议程，确定了发言顺序。", "如果天气允许，午饭安排在院子里。",
            "团队希望两场会议之间能休息一下。", "大家都同意把回顾会挪到下午。",
            "幻灯片会在会后分享，而不是会前。",
        ),
    ),
    Language(
        "fr",
        (
            Key("traductrice", "claire.martin@traduction-lyon.fr", "plain",
                "La traductrice répond à l'adresse {v}, plutôt le matin."),
            Key("EORI", "FR448812093301", "reply", "Quel est votre numéro EORI ?"),
            Key("échantillon", "ECH-5518-D", "long",
                "L'échantillon que nous gardons porte le numéro {v}."),
            Key("facture", "12 480,50 €", "plain", "La facture finale s'élève à {v} TTC."),
        ),
        (
            "La {k} a-t-elle confirmé le {t} ?", "Il faut redemander à la {k} pour le {t}.",
            "La {k} est-elle toujours d'accord pour le {t} ?",
            "La {k} n'a pas encore répondu pour le {t}.",
            "Rappelle-moi de vérifier la {k} avant le {t}.",
            "Qui a parlé à la {k} du {t} ?", "La question de la {k} pour le {t} reste ouverte.",
            "Laissons la {k} de côté pour le {t}.", "Je ne sais pas si la {k} compte pour le {t}.",
            "Peux-tu résumer ce que nous savons de la {k} et du {t} ?",
        ),
        ("planning", "budget", "contrat", "atelier", "lancement", "bilan", "audit", "rapport",
         "projet", "séminaire"),
        (
            "Nous avons repris l'ordre du jour et fixé l'ordre des interventions.",
            "Le déjeuner aura lieu dans la cour si le temps le permet.",
            "L'équipe souhaite une courte pause entre les deux séances.",
            "Personne ne s'est opposé à déplacer la rétrospective à l'après-midi.",
            "Les diapositives seront partagées après la réunion, pas avant.",
        ),
    ),
    Language(
        "ja",
        (
            Key("翻訳者", "03-5551-0199", "plain", "翻訳者の直通電話は{v}です。午前中が確実です。"),
            Key("EORI", "JP7712049388", "reply", "EORI番号を教えていただけますか？"),
            Key("サンプル", "SMP-8830-J", "long", "保管しているサンプルの番号は{v}です。"),
            Key("請求書", "1,248,050円", "plain", "最終的な請求書の金額は{v}（税込）です。"),
        ),
        (
            "{k}は{t}について確認しましたか？", "{t}の件でもう一度{k}に聞くべきです。",
            "{k}は{t}にまだ賛成していますか？", "{k}から{t}の返事がまだありません。",
            "{t}の前に{k}を確認するよう思い出させてください。",
            "誰が{k}と{t}について話しましたか？",
            "{t}の{k}の件はまだ未解決です。", "{t}ではしばらく{k}を外しておきましょう。",
            "{k}が{t}に関係あるかどうかわかりません。",
            "{k}と{t}についてわかっていることをまとめてください。",
        ),
        ("日程", "予算", "契約", "研修", "発表", "引き継ぎ", "監査", "報告", "会議", "計画"),
        (
            "議題をもう一度確認し、発表の順番を決めました。",
            "天気が良ければ昼食は中庭で取ります。",
            "チームは二つのセッションの間に短い休憩を希望しています。",
            "振り返りを午後に移すことに誰も反対しませんでした。",
            "スライドは会議の前ではなく後に共有します。",
        ),
    ),
)  # fmt: skip


@dataclass(frozen=True)
class Planted:
    language: str
    key: Key


def texts_of(language: Language, rng: random.Random) -> list[tuple[str, str, Key | None]]:
    """``(role, text, key stated or None)`` of one language's conversation, in order."""
    blocks: list[list[tuple[str, str, Key | None]]] = []
    for key in language.keys:
        pairs = [(f, t) for f in language.fillers for t in language.topics]
        for filler, topic in rng.sample(pairs, FILLERS_PER_KEY):
            blocks.append([("user", filler.format(k=key.word, t=topic), None)])
        blocks.append(_statement(language, key, rng))
    rng.shuffle(blocks)
    texts: list[tuple[str, str, Key | None]] = []
    for block in blocks:
        texts.extend(block)
        # Every turn gets a plain acknowledgement, so that roles alternate as in a chat.
        if block[-1][0] == "user":
            texts.append(("assistant", rng.choice(language.padding), None))
    return texts


def _statement(language: Language, key: Key, rng: random.Random) -> list:
    if key.way == "reply":
        return [("assistant", key.statement, None), ("user", key.value, key)]
    stated = key.statement.format(v=key.value)
    if key.way == "plain":
        return [("user", stated, key)]
    mention = rng.choice(language.fillers).format(k=key.word, t=rng.choice(language.topics))
    padding = []
    while sum(len(p) for p in padding) < 900:
        padding.append(rng.choice(language.padding))
    sep = "" if language.code in ("zh", "ja") else " "
    return [("user", sep.join([mention, *padding, stated]), key)]


def build(owner) -> list[tuple[object, Planted]]:
    """The five conversations, stored and indexed through the services (as a chat keeps
    them); returns ``(conversation, planted key)`` for every key."""
    from chat import services

    rng = random.Random(11)
    planted = []
    for language in LANGUAGES:
        conversation = services.conversation_create(owner=owner, title=f"quality {language.code}")
        for role, text, _key in texts_of(language, rng):
            if role == "user":
                services.user_message_create(conversation=conversation, content=text)
            else:
                message = services.assistant_message_start(
                    conversation=conversation, run_id="bench", mode="react"
                )
                services.assistant_message_finish(message=message, content=text)
        planted.extend((conversation, Planted(language.code, key)) for key in language.keys)
    return planted


def place_of_value(found: list, value: str) -> int | None:
    """The 1-based place of the first passage quoting ``value``, None when none does."""
    for place, passage in enumerate(found, 1):
        if isinstance(passage, str) and value in passage:
            return place
    return None


def report(owner) -> None:
    from chat.recall.lookup import recall_passages

    rows: dict[str, list[int | None]] = {}
    ways: dict[str, list[int | None]] = {}
    for conversation, planted in build(owner):
        found = recall_passages(conversation_id=conversation.id, query=planted.key.word, limit=5)
        place = place_of_value(found, planted.key.value)
        rows.setdefault(planted.language, []).append(place)
        ways.setdefault(planted.key.way, []).append(place)
        shown = place if place is not None else "not found"
        print(f"  {planted.language} {planted.key.way:5} {planted.key.word}: {shown}")
    print(f"recall quality, {FILLERS_PER_KEY} filler mentions per key (place of the value):")
    for name, places in [*rows.items(), *ways.items()]:
        print(f"  {name:5} {_summary(places)}")
    everything = [p for places in rows.values() for p in places]
    print(f"  all   {_summary(everything)}")


def _summary(places: list[int | None]) -> str:
    found = [p for p in places if p is not None]
    first = sum(1 for p in found if p == 1)
    median = statistics.median(found) if found else "-"
    return f"found {len(found)}/{len(places)}, first {first}/{len(places)}, median place {median}"
