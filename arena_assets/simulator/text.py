"""Prompt and answer text in a given language, category and model style.

Answers carry measurable style: their length follows the model's verbosity, and the
number of markdown elements (headers, list items, bold spans) follows its markdown habit,
so style features computed later from the text reflect the hidden truth.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from arena_assets.simulator.config import BASE_ANSWER_CHARS
from arena_assets.simulator.lexicon import CODE_SNIPPETS, LEX, MATH_LINES, SENTENCE_SEP

HEADER_LEVELS = (1, 2, 2, 2, 3, 3, 4, 5, 6)


@dataclass(frozen=True)
class Answer:
    text: str
    chars: int
    markdown: int  # headers + list items + bold spans


class TextMaker:
    """Composes text from the per-language phrase lists with one seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def prompt(self, lang: str, category: str) -> str:
        lx = LEX[lang]
        rng = self.rng
        text = rng.choice(lx["ask"]).format(x=rng.choice(lx["topics"][category]))
        if rng.random() < 0.6:
            text += SENTENCE_SEP[lang] + rng.choice(lx["extra"])
        return text

    def followup(self, lang: str) -> str:
        return self.rng.choice(LEX[lang]["follow"])

    def greeting(self, lang: str) -> str:
        return self.rng.choice(LEX[lang]["greet"])

    def identity(self, lang: str, name: str, org: str) -> str:
        return LEX[lang]["self"].format(name=name, org=org)

    def near_duplicate(self, text: str, lang: str) -> str:
        """A small edit of ``text`` (case, punctuation, an extra word); never equal to it."""
        rng = self.rng
        edit = rng.randrange(4)
        if edit == 0 and text[:1].lower() != text[:1].upper():
            first = text[0]
            out = (first.lower() if first.isupper() else first.upper()) + text[1:]
        elif edit == 1 and text[-1:] in ".?!。？！":
            out = text[:-1]
        elif edit == 2:
            out = text + ("!!" if lang not in ("zh", "ja") else "！")
        else:
            sep = SENTENCE_SEP[lang] or ""
            out = LEX[lang]["please"] + (sep or "") + text
        return out if out != text else text + " ?"

    def answer(
        self,
        lang: str,
        category: str,
        verbosity: float,
        markdown: float,
        preface: str | None = None,
        scale: float = 1.0,
    ) -> Answer:
        """An answer of about ``BASE_ANSWER_CHARS[category] × verbosity`` characters.

        ``markdown`` in [0, 1] is the chance that each block is a header or a list and that
        a paragraph sentence is bold; coding answers always hold one fenced code block.
        """
        rng = self.rng
        lx = LEX[lang]
        sep = SENTENCE_SEP[lang]
        target = BASE_ANSWER_CHARS[category] * verbosity * scale * rng.lognormvariate(0.0, 0.25)
        blocks: list[str] = []
        n_md = 0
        length = 0
        if preface:
            blocks.append(preface)
            length += len(preface)
        code_done = category != "coding"
        math_done = category not in ("math", "homework")
        while length < target or not code_done:
            u = rng.random()
            if u < 0.3 * markdown:
                block = "#" * rng.choice(HEADER_LEVELS) + " " + rng.choice(lx["heads"])
                n_md += 1
            elif u < 0.6 * markdown:
                ordered = rng.random() < 0.5
                items = []
                for i in range(rng.randrange(2, 6)):
                    bullet = f"{i + 1}." if ordered else rng.choice("-*")
                    items.append(f"{bullet} {rng.choice(lx['answer'])}")
                block = "\n".join(items)
                n_md += len(items)
            elif not code_done:
                block = "```python\n" + rng.choice(CODE_SNIPPETS) + "\n```"
                code_done = True
            elif not math_done:
                block = rng.choice(MATH_LINES)
                math_done = True
            else:
                sentences = []
                for _ in range(rng.randrange(2, 5)):
                    s = rng.choice(lx["answer"])
                    if rng.random() < 0.25 * markdown:
                        s = f"**{s}**"
                        n_md += 1
                    sentences.append(s)
                block = sep.join(sentences)
            blocks.append(block)
            length += len(block) + 2
        text = "\n\n".join(blocks)
        return Answer(text, len(text), n_md)
