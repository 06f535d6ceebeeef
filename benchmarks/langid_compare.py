"""Compare offline language identifiers on accuracy and speed; prints one table.

    .venv/bin/python benchmarks/langid_compare.py [--repeats 3] [--chars 500]

Accuracy sets: (1) real arena conversations (FastChat `language` labels, user turns)
from ../shared/real (skipped when absent), (2) the hand-written sentences below,
(3) simulator prompts when `arena_assets.simulator` can generate a month.
Speed: texts/s over 2,000 real prompts (or the written ones, repeated), median of repeats.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from arena_assets.clean.language import FastTextLid, detection_text

REAL = Path(__file__).resolve().parents[2] / "shared" / "real" / "battles"
NAME_TO_ISO = {
    "English": "en",
    "Chinese": "zh",
    "Russian": "ru",
    "German": "de",
    "Vietnamese": "vi",
    "Japanese": "ja",
    "Thai": "th",
    "French": "fr",
    "Spanish": "es",
    "Portuguese": "pt",
    "Czech": "cs",
    "Arabic": "ar",
    "Turkish": "tr",
    "Hindi": "hi",
    "Korean": "ko",
    "Italian": "it",
    "Polish": "pl",
    "Dutch": "nl",
    "Persian": "fa",
    "Indonesian": "id",
}
WRITTEN = {
    "en": [
        "Can you explain how photosynthesis works in simple terms?",
        "Write a short poem about the sea at night.",
        "What is the difference between a list and a tuple in Python?",
    ],
    "de": [
        "Kannst du mir erklären, wie die Photosynthese funktioniert?",
        "Schreib ein kurzes Gedicht über das Meer bei Nacht.",
        "Was ist der Unterschied zwischen einer Liste und einem Tupel?",
    ],
    "fr": [
        "Peux-tu m'expliquer simplement comment fonctionne la photosynthèse ?",
        "Écris un court poème sur la mer la nuit.",
        "Quelle est la différence entre une liste et un tuple en Python ?",
    ],
    "es": [
        "¿Puedes explicarme cómo funciona la fotosíntesis?",
        "Escribe un poema corto sobre el mar de noche.",
        "¿Cuál es la diferencia entre una lista y una tupla?",
    ],
    "pt": [
        "Você pode me explicar como funciona a fotossíntese?",
        "Escreva um poema curto sobre o mar à noite.",
        "Qual é a diferença entre uma lista e uma tupla em Python?",
    ],
    "it": [
        "Puoi spiegarmi come funziona la fotosintesi?",
        "Scrivi una breve poesia sul mare di notte.",
        "Qual è la differenza tra una lista e una tupla in Python?",
    ],
    "nl": [
        "Kun je uitleggen hoe fotosynthese werkt?",
        "Schrijf een kort gedicht over de zee in de nacht.",
        "Wat is het verschil tussen een lijst en een tuple?",
    ],
    "pl": [
        "Czy możesz wyjaśnić, jak działa fotosynteza?",
        "Napisz krótki wiersz o morzu nocą.",
        "Jaka jest różnica między listą a krotką w Pythonie?",
    ],
    "ru": [
        "Можешь объяснить, как работает фотосинтез?",
        "Напиши короткое стихотворение о ночном море.",
        "В чём разница между списком и кортежем в Python?",
    ],
    "uk": [
        "Чи можеш ти пояснити, як працює фотосинтез?",
        "Напиши короткий вірш про нічне море.",
        "Яка різниця між списком і кортежем у Python?",
    ],
    "zh": [
        "你能用简单的话解释一下光合作用是怎么回事吗？",
        "写一首关于夜晚大海的短诗。",
        "Python 中列表和元组有什么区别？",
    ],
    "ja": [
        "光合成の仕組みを簡単に説明してもらえますか？",
        "夜の海についての短い詩を書いてください。",
        "Pythonのリストとタプルの違いは何ですか？",
    ],
    "ko": [
        "광합성이 어떻게 작동하는지 쉽게 설명해 줄 수 있나요?",
        "밤바다에 관한 짧은 시를 써 주세요.",
        "파이썬에서 리스트와 튜플의 차이는 무엇인가요?",
    ],
    "ar": [
        "هل يمكنك أن تشرح لي كيف تعمل عملية التمثيل الضوئي؟",
        "اكتب قصيدة قصيرة عن البحر في الليل.",
        "ما الفرق بين القائمة والصف في بايثون؟",
    ],
    "hi": [
        "क्या आप सरल शब्दों में समझा सकते हैं कि प्रकाश संश्लेषण कैसे काम करता है?",
        "रात के समुद्र के बारे में एक छोटी कविता लिखिए।",
        "पायथन में लिस्ट और टपल में क्या अंतर है?",
    ],
    "tr": [
        "Fotosentezin nasıl çalıştığını basitçe açıklayabilir misin?",
        "Gece denizi hakkında kısa bir şiir yaz.",
        "Python'da liste ile demet arasındaki fark nedir?",
    ],
    "vi": [
        "Bạn có thể giải thích quá trình quang hợp hoạt động như thế nào không?",
        "Hãy viết một bài thơ ngắn về biển đêm.",
        "Sự khác nhau giữa list và tuple trong Python là gì?",
    ],
    "id": [
        "Bisakah kamu menjelaskan bagaimana fotosintesis bekerja?",
        "Tulis puisi pendek tentang laut di malam hari.",
        "Apa perbedaan antara list dan tuple di Python?",
    ],
    "fa": [
        "می‌توانی توضیح بدهی فتوسنتز چگونه کار می‌کند؟",
        "یک شعر کوتاه درباره دریا در شب بنویس.",
        "تفاوت لیست و تاپل در پایتون چیست؟",
    ],
    "th": [
        "ช่วยอธิบายการสังเคราะห์ด้วยแสงแบบง่าย ๆ ได้ไหม",
        "เขียนกลอนสั้น ๆ เกี่ยวกับทะเลตอนกลางคืน",
        "ลิสต์กับทูเพิลในไพทอนต่างกันอย่างไร",
    ],
}


def real_samples() -> list[tuple[str, str]]:
    path = REAL / "clean_battles_2024_full_conversations.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        iso = NAME_TO_ISO.get(row["language"])
        if iso:
            users = [m["content"] for m in row["conversation_a"] if m["role"] == "user"]
            out.append((" ".join(users), iso))
    return out


def simulator_samples(n: int = 500) -> list[tuple[str, str]]:
    """(prompt, language) pairs from the simulator, when it exposes them; else []."""
    try:
        from arena_assets.simulator import sample_prompts  # type: ignore[attr-defined]
    except Exception:
        return []
    return [(p["text"], p["language"]) for p in sample_prompts(n=n, seed=0)]


def prepare(texts: Sequence[str], chars: int) -> list[str]:
    frame = pl.DataFrame({"t": list(texts)})
    return frame.select(detection_text(pl.col("t")).str.slice(0, chars)).to_series().to_list()


def make_detectors() -> dict[str, Callable[[list[str]], list[str]]]:
    fasttext = FastTextLid(min_score=0.0)

    def run_fasttext(texts: list[str]) -> list[str]:
        return fasttext.detect(texts)[0]

    import py3langid

    def run_py3langid(texts: list[str]) -> list[str]:
        return [py3langid.classify(t)[0] for t in texts]

    from lingua import LanguageDetectorBuilder

    lingua_low = LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()

    def run_lingua(texts: list[str]) -> list[str]:
        found = lingua_low.detect_languages_in_parallel_of(texts)
        return [f.iso_code_639_1.name.lower() if f else "und" for f in found]

    return {
        "fasttext lid.176.ftz": run_fasttext,
        "py3langid": run_py3langid,
        "lingua low-acc parallel": run_lingua,
    }


def accuracy(
    run: Callable[[list[str]], list[str]], samples: list[tuple[str, str]], chars: int
) -> float | None:
    if not samples:
        return None
    predicted = run(prepare([t for t, _ in samples], chars))
    return sum(p == gold for p, (_, gold) in zip(predicted, samples)) / len(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chars", type=int, default=500)
    args = parser.parse_args()
    real = real_samples()
    written = [(t, iso) for iso, ts in WRITTEN.items() for t in ts]
    simulated = simulator_samples()
    speed_texts = prepare([t for t, _ in real] * 20 or [t for t, _ in written] * 40, args.chars)
    print(
        f"real={len(real)} written={len(written)} simulated={len(simulated)} "
        f"speed set={len(speed_texts)} texts, ≤{args.chars} chars"
    )
    print(f"{'detector':26} {'real':>6} {'written':>8} {'sim':>6} {'texts/s':>10}")
    for name, run in make_detectors().items():
        run(speed_texts[:50])  # load the model outside the timing
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            run(speed_texts)
            times.append(time.perf_counter() - start)
        rate = len(speed_texts) / statistics.median(times)
        cells = [accuracy(run, s, args.chars) for s in (real, written, simulated)]
        shown = " ".join(f"{c:>6.3f}" if c is not None else f"{'-':>6}" for c in cells)
        print(f"{name:26} {shown} {rate:>10,.0f}")


if __name__ == "__main__":
    main()
