# ruff: noqa: RUF001 -- requests in six languages are the point.
"""What kind of request is this: Ask's router on requests written after the first version of its examples
(issue 35, item 2; examples added later were checked against these too, so they are no longer unseen), per
language, side by side with the English rules alone (the router before the change).

    DEBUG=1 .venv/bin/python -m bench.ask_intents [--show-misses]

No language model: the local embedder's nearest examples (apps/ask/intent_model.py). Prints accuracy per
language and per kind, the share of questions misread (the costly error: a question refused or answered
with a greeting), and the time per request."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

# (language, request, kind) — kind: question | chat | unsupported | follow_up_drafts
REQUESTS: list[tuple[str, str, str]] = [
    ("en", "cheers, that's exactly what I needed", "chat"),
    ("en", "hey there!", "chat"),
    ("en", "remove every newsletter from my inbox", "unsupported"),
    ("en", "send Lisa the directions to the venue", "unsupported"),
    ("en", "write nudges to everybody who ignored my offer for two weeks", "follow_up_drafts"),
    ("en", "what time does the train to Leeds leave?", "question"),
    ("en", "who cancelled the Friday standup?", "question"),
    ("en", "the receipt for the new laptop", "question"),
    ("de", "Super, danke dir!", "chat"),
    ("de", "Guten Morgen", "chat"),
    ("de", "Entferne alle Werbemails von Möbelhaus Krause", "unsupported"),
    ("de", "Leite die Rechnung an meinen Steuerberater weiter", "unsupported"),
    ("de", "Wie hoch war die letzte Gasrechnung?", "question"),
    ("de", "Wer hat das Meeting am Freitag abgesagt?", "question"),
    ("de", "Kündigungsbestätigung vom Fitnessstudio", "question"),
    ("tr", "sağ ol, harika", "chat"),
    ("tr", "iyi günler", "chat"),
    ("tr", "Bankadan gelen tüm reklam e-postalarını sil", "unsupported"),
    ("tr", "Bu faturayı muhasebeciye gönder", "unsupported"),
    ("tr", "Uçuşum saat kaçta kalkıyor?", "question"),
    ("tr", "Ev sahibim kira hakkında ne yazdı?", "question"),
    ("es", "vale, muchas gracias", "chat"),
    ("es", "buenas tardes", "chat"),
    ("es", "Elimina los correos promocionales de la tienda", "unsupported"),
    ("es", "Archiva todos los mensajes del banco", "unsupported"),
    ("es", "¿A qué hora sale mi vuelo a Sevilla?", "question"),
    ("es", "¿Qué dijo el casero sobre la calefacción?", "question"),
    ("fr", "super, merci bien", "chat"),
    ("fr", "salut !", "chat"),
    ("fr", "Efface tous les messages publicitaires de la boutique", "unsupported"),
    ("fr", "Marque tous les mails de la banque comme lus", "unsupported"),
    ("fr", "À quelle heure part mon train pour Lyon ?", "question"),
    ("fr", "Qu'a dit le propriétaire à propos du chauffage ?", "question"),
    ("nl", "top, dank je", "chat"),
    ("nl", "goedemorgen", "chat"),
    ("nl", "Gooi alle reclamemails van de webwinkel weg", "unsupported"),
    ("nl", "Zet de mails van de bank in de map Financiën", "unsupported"),
    ("nl", "Hoe laat vertrekt mijn vlucht naar Malaga?", "question"),
    ("nl", "Wat schreef de verhuurder over de verwarming?", "question"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import django

    django.setup()
    from apps.ask.intent import route_request
    from apps.ask.intent_model import classify_by_examples

    def rules_only(text: str) -> str:
        return route_request(text).intent

    def with_examples(text: str) -> str:
        intent = route_request(text).intent
        return classify_by_examples(text).intent if intent == "question" else intent

    classify_by_examples("warm up")  # the examples' embeddings, once per process
    results: dict[str, dict[str, list[bool]]] = {"rules": defaultdict(list), "examples": defaultdict(list)}
    kinds: dict[str, dict[str, list[bool]]] = {"rules": defaultdict(list), "examples": defaultdict(list)}
    misread_questions = {"rules": 0, "examples": 0}
    misses: list[str] = []
    elapsed = 0.0
    for language, text, kind in REQUESTS:
        for name, route in (("rules", rules_only), ("examples", with_examples)):
            started = time.perf_counter()
            got = route(text)
            if name == "examples":
                elapsed += time.perf_counter() - started
                if got != kind:
                    misses.append(f"{language} {kind:17} read as {got:17} {text}")
            results[name][language].append(got == kind)
            kinds[name][kind].append(got == kind)
            misread_questions[name] += kind == "question" and got != "question"
    questions = sum(kind == "question" for _, _, kind in REQUESTS)
    print(f"{len(REQUESTS)} requests (written after the examples' first version); English rules alone vs with examples")
    print(f"{'':18}{'rules':>10}{'examples':>10}")
    for language in dict.fromkeys(lang for lang, _, _ in REQUESTS):
        row = [sum(results[n][language]) / len(results[n][language]) for n in ("rules", "examples")]
        print(f"{language:18}{row[0]:>10.2f}{row[1]:>10.2f}")
    for kind in dict.fromkeys(kind for _, _, kind in REQUESTS):
        row = [sum(kinds[n][kind]) / len(kinds[n][kind]) for n in ("rules", "examples")]
        print(f"{kind:18}{row[0]:>10.2f}{row[1]:>10.2f}")
    total = [sum(sum(v) for v in results[n].values()) / len(REQUESTS) for n in ("rules", "examples")]
    print(f"{'all':18}{total[0]:>10.2f}{total[1]:>10.2f}")
    print(
        f"questions misread: rules {misread_questions['rules']}/{questions}, "
        f"examples {misread_questions['examples']}/{questions}"
    )
    print(f"time per request with the examples: {1000 * elapsed / len(REQUESTS):.1f} ms")
    if args.show_misses:
        print(json.dumps(misses, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
