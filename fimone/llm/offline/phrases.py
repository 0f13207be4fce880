"""The offline model's fixed sentences, in the user's language (English, Chinese, German;
the sentences of an answer also in French and Spanish, which instructions may ask for).

A Chinese or German user must not get English boilerplate around an answer that is
otherwise theirs: every sentence the offline model writes on its own is looked up here by
the language ``detect_language`` found in the user's request, or, when the request does not
show one ("3+4"), the user's interface language the run was given. A plain table rather than
Django's gettext: the model is plain Python and answers the same with or without Django.
Placeholders are ``str.format`` fields.
"""

from __future__ import annotations

PHRASES: dict[str, dict[str, str]] = {
    # True whether the model answers for want of a configured one or was picked beside one.
    "note": {
        "en": "(fimone's offline model answered this: it is not a real language model, so I "
        "can only run tools and repeat what I was given.)",
        "de": "(Das hat fimones Offline-Modell beantwortet: Es ist kein echtes Sprachmodell, "
        "ich kann nur Werkzeuge aufrufen und wiedergeben, was ich bekommen habe.)",
        "zh": "（这是 fimone 的离线模型给出的回答：它不是真正的语言模型，"
        "我只能调用工具并复述已有的信息。）",
        "fr": "(Le modèle hors ligne de fimone a répondu : ce n'est pas un vrai modèle de "
        "langage, je ne peux donc qu'utiliser des outils et répéter ce que j'ai reçu.)",
        "es": "(Respondió el modelo sin conexión de fimone: no es un modelo de lenguaje real, "
        "así que solo puedo usar herramientas y repetir lo que recibí.)",
    },
    "time": {
        "en": "The current time is {result}.",
        "de": "Die aktuelle Uhrzeit ist {result}.",
        "zh": "现在的时间：{result}",
        "fr": "L'heure actuelle est {result}.",
        "es": "La hora actual es {result}.",
    },
    "recall": {
        "en": "Earlier in our conversation:",
        "de": "Früher in unserem Gespräch:",
        "zh": "之前的对话中提到：",
        "fr": "Plus tôt dans notre conversation :",
        "es": "Antes en nuestra conversación:",
    },
    "recall_none": {
        "en": "I found nothing earlier in our conversation that matches.",
        "de": "Ich habe früher in unserem Gespräch nichts Passendes gefunden.",
        "zh": "在之前的对话中没有找到相关的内容。",
        "fr": "Je n'ai rien trouvé de correspondant plus tôt dans notre conversation.",
        "es": "No encontré nada que coincida antes en nuestra conversación.",
    },
    "images": {
        "en": "I received {count} images, but I cannot see images: the offline model "
        "reads text only.",
        "de": "Ich habe {count} Bilder erhalten, kann aber keine Bilder sehen: Das "
        "Offline-Modell liest nur Text.",
        "zh": "我收到了 {count} 张图片，但我看不到图片：离线模型只能读取文字。",
        "fr": "J'ai reçu {count} images, mais je ne peux pas voir d'images : le modèle hors "
        "ligne ne lit que du texte.",
        "es": "Recibí {count} imágenes, pero no puedo ver imágenes: el modelo sin conexión "
        "solo lee texto.",
    },
    "images_one": {
        "en": "I received an image, but I cannot see images: the offline model reads text only.",
        "de": "Ich habe ein Bild erhalten, kann aber keine Bilder sehen: Das Offline-Modell "
        "liest nur Text.",
        "zh": "我收到了 1 张图片，但我看不到图片：离线模型只能读取文字。",
        "fr": "J'ai reçu une image, mais je ne peux pas voir d'images : le modèle hors ligne "
        "ne lit que du texte.",
        "es": "Recibí una imagen, pero no puedo ver imágenes: el modelo sin conexión solo lee "
        "texto.",
    },
    "remember": {
        "en": "Noted. Everything you write here stays in this conversation's history, and I "
        "can look it up when you ask about it later.",
        "de": "Notiert. Alles, was du hier schreibst, bleibt im Verlauf dieses Gesprächs, "
        "und ich kann es nachschlagen, wenn du später danach fragst.",
        "zh": "好的，已记下。你在这里写的内容都会保存在本次对话的历史中，之后你问起时我可以查找。",
        "fr": "C'est noté. Tout ce que vous écrivez ici reste dans l'historique de cette "
        "conversation, et je peux le retrouver quand vous m'en parlerez plus tard.",
        "es": "Anotado. Todo lo que escribes aquí queda en el historial de esta conversación, "
        "y puedo buscarlo cuando me preguntes más tarde.",
    },
    "asked": {
        "en": "You asked: “{query}”.",
        "de": "Du hast gefragt: „{query}“.",
        "zh": "你问的是：“{query}”。",
        "fr": "Vous avez demandé : « {query} ».",
        "es": "Preguntaste: «{query}».",
    },
    "key_points": {
        "en": "The key points of what I was given:",
        "de": "Die wichtigsten Punkte dessen, was ich bekommen habe:",
        "zh": "我得到的信息中的要点：",
        "fr": "Les points essentiels de ce que j'ai reçu :",
        "es": "Los puntos clave de lo que recibí:",
    },
    "page": {
        "en": "From the page {url}{title}:",
        "de": "Von der Seite {url}{title}:",
        "zh": "网页 {url}{title} 的内容：",
        "fr": "De la page {url}{title} :",
        "es": "De la página {url}{title}:",
    },
    "page_status": {
        "en": "The server did not give the page as asked: {error}",
        "de": "Der Server hat die Seite nicht wie erbeten geliefert: {error}",
        "zh": "服务器没有按请求返回该网页：{error}",
        "fr": "Le serveur n'a pas fourni la page demandée : {error}",
        "es": "El servidor no entregó la página pedida: {error}",
    },
    "page_error": {
        "en": "I could not read the page: {error}",
        "de": "Ich konnte die Seite nicht lesen: {error}",
        "zh": "我无法读取该网页：{error}",
        "fr": "Je n'ai pas pu lire la page : {error}",
        "es": "No pude leer la página: {error}",
    },
    "empty": {"en": "(empty)", "de": "(leer)", "zh": "（空）", "fr": "(vide)", "es": "(vacío)"},
    "document": {
        "en": "From {name}, page {page}:",
        "de": "Aus {name}, Seite {page}:",
        "zh": "摘自 {name} 第 {page} 页：",
        "fr": "De {name}, page {page} :",
        "es": "De {name}, página {page}:",
    },
    "document_summary": {
        "en": "{name} ({count} pages), in short:",
        "de": "{name} ({count} Seiten), kurz gefasst:",
        "zh": "{name}（共 {count} 页）要点：",
        "fr": "{name} ({count} pages), en bref :",
        "es": "{name} ({count} páginas), en resumen:",
    },
    "document_summary_one": {
        "en": "{name} (1 page), in short:",
        "de": "{name} (1 Seite), kurz gefasst:",
        "zh": "{name}（共 1 页）要点：",
        "fr": "{name} (1 page), en bref :",
        "es": "{name} (1 página), en resumen:",
    },
    "image_described": {
        "en": "I cannot see images, but every upload has a description stored with it. "
        "{name} ({size}) is described as: {description}",
        "de": "Ich kann keine Bilder sehen, aber zu jedem hochgeladenen Bild ist eine "
        "Beschreibung gespeichert. {name} ({size}) ist so beschrieben: {description}",
        "zh": "我看不到图片，但每张上传的图片都存有一段描述。"
        "{name}（{size}）的描述是：{description}",
        "fr": "Je ne peux pas voir d'images, mais chaque image envoyée a une description "
        "enregistrée. {name} ({size}) est décrite ainsi : {description}",
        "es": "No puedo ver imágenes, pero cada imagen subida tiene una descripción guardada. "
        "{name} ({size}) se describe así: {description}",
    },
    "document_none": {
        "en": "I found nothing in {name} that matches.",
        "de": "Ich habe in {name} nichts Passendes gefunden.",
        "zh": "在 {name} 中没有找到相关的内容。",
        "fr": "Je n'ai rien trouvé de correspondant dans {name}.",
        "es": "No encontré nada que coincida en {name}.",
    },
    # The planner's and the analyser's own words (DAG mode).
    "plan_combine": {
        "en": "Combine the results of s1 and s2 into one answer for the user.",
        "de": "Die Ergebnisse von s1 und s2 zu einer Antwort für den Nutzer zusammenführen.",
        "zh": "综合 s1 和 s2 的结果，给出一个完整的回答。",
    },
    "plan_combine_chain": {
        "en": "Combine the results of {steps} and {last} into one answer for the user.",
        "de": "Die Ergebnisse von {steps} und {last} zu einer Antwort für den Nutzer "
        "zusammenführen.",
        "zh": "综合 {steps} 和 {last} 的结果，给出一个完整的回答。",
    },
    "plan_gather": {
        "en": "Collect the facts, figures and tool results needed for: {request}",
        "de": "Die Fakten, Zahlen und Werkzeugergebnisse sammeln, die dafür nötig sind: {request}",
        "zh": "收集回答该问题所需的事实、数据和工具结果：{request}",
    },
    "plan_answer": {
        "en": "Write the final answer from what s1 collected.",
        "de": "Aus dem, was s1 gesammelt hat, die endgültige Antwort schreiben.",
        "zh": "根据 s1 收集到的信息写出最终回答。",
    },
    "verdict_ok": {
        "en": "every step returned a result and the answer holds each of them",
        "de": "jeder Schritt hat ein Ergebnis geliefert und die Antwort enthält jedes davon",
        "zh": "每个步骤都返回了结果，且回答包含了每个结果",
    },
    "verdict_no_results": {
        "en": "no step results were given",
        "de": "es wurden keine Schrittergebnisse übergeben",
        "zh": "没有收到任何步骤结果",
    },
    "verdict_failed": {
        "en": "step(s) {steps} failed or returned nothing",
        "de": "Schritt(e) {steps} fehlgeschlagen oder ohne Ergebnis",
        "zh": "步骤 {steps} 失败或没有结果",
    },
    "verdict_missing": {
        "en": "the answer does not state what was asked: {missing}",
        "de": "die Antwort nennt nicht, was gefragt war: {missing}",
        "zh": "回答中缺少所要求的值：{missing}",
    },
}
# How a list of missing figures is joined in each language.
SEPARATORS = {"en": "; ", "de": "; ", "zh": "；"}


def language_of(code: str | None) -> str:
    """The phrase-table language of a language code ("zh-hans", "de-DE", "en"); English
    for anything the table does not speak."""
    short = (code or "").lower().replace("_", "-").split("-", 1)[0]
    return short if short in ("en", "de", "zh") else "en"


def phrase(key: str, lang: str, **fields: object) -> str:
    """The sentence ``key`` in ``lang`` (English when the language has none). A ``count``
    of 1 picks the singular sentence ``key_one`` where the table has one."""
    if fields.get("count") == 1 and f"{key}_one" in PHRASES:
        key = f"{key}_one"
    texts = PHRASES[key]
    return texts.get(lang, texts["en"]).format(**fields)


# The note as answers stored before it was reworded say it (still stripped when quoted).
_EARLIER_NOTES = (
    "(fimone's offline model answered this: no language model is configured, so I can only "
    "run tools and repeat what I was given.)",
    "(Das hat fimones Offline-Modell beantwortet: Es ist kein Sprachmodell konfiguriert, ich "
    "kann nur Werkzeuge aufrufen und wiedergeben, was ich bekommen habe.)",
    "（这是 fimone 的离线模型给出的回答：尚未配置语言模型，我只能调用工具并复述已有的信息。）",
    "(Le modèle hors ligne de fimone a répondu : aucun modèle de langage n'est configuré, je "
    "ne peux donc qu'utiliser des outils et répéter ce que j'ai reçu.)",
    "(Respondió el modelo sin conexión de fimone: no hay ningún modelo de lenguaje "
    "configurado, así que solo puedo usar herramientas y repetir lo que recibí.)",
)


def all_notes() -> list[str]:
    """The honesty note in every language, as written now and before (to strip it from
    quoted earlier answers)."""
    return [*PHRASES["note"].values(), *_EARLIER_NOTES]
