"""Is a prompt about code? A heuristic, no LLM: fenced code, code-shaped lines, stack traces,
or a programming language named together with a programming task.

Any one strong signal decides (a fence, a stack trace, two code-shaped lines); otherwise a
language name (Python, SQL, ...) must come with a task word (function, bug, query, ...),
so "the python ate a rabbit" or "Java coffee beans" stay false.
"""

from __future__ import annotations

import re

CODE_VERSION = "code-v1"
CODE_LABELER = "heuristic"

_FENCE = re.compile(r"```|~~~")
_STACK = re.compile(
    r"Traceback \(most recent call last\)"
    r"|^\s+at [\w$.<>]+\([\w$]+\.(?:java|kt|scala):\d+\)"
    r"|^\s+at .+ \(.+\.(?:js|ts|mjs):\d+:\d+\)"
    r"|Exception in thread \""
    r"|\b\w+(?:Error|Exception): .+\n?\s*(?:at |File \")"
    r"|^\s*File \".+\", line \d+"
    r"|panicked at |Segmentation fault|segfault|core dumped"
    r"|error(?:\[E\d+\])?: .+\n\s*--> .+:\d+:\d+",
    re.M,
)
_CODE_LINE = re.compile(
    r"^\s*(?:def \w+\(|class \w+[:(]|import [\w.]+|from [\w.]+ import |#include\s*<"
    r"|(?:public|private|protected|static)\s+[\w<>\[\]]+\s+\w+\s*\(|function\s+\w*\s*\("
    r"|(?:const|let|var)\s+\w+\s*=|fn \w+\(|func \w+\(|package \w+;?$|using namespace "
    r"|SELECT\s.+\sFROM\s|INSERT INTO |CREATE TABLE |for\s*\(.*;.*;.*\)|while\s*\(.+\)\s*\{"
    r"|if\s*\(.+\)\s*\{|return\s[^.!?]*;\s*$|console\.log\(|print\(|printf\(|System\.out\."
    r"|\}\s*else\s*\{|<\/?(?:div|span|html|body|script)[\s>]|\$\s*(?:pip|npm|git|docker|cargo) "
    r"|[\w.$\[\]]+\s*<-\s*[\w.]+\()",  # R assignment from a call
    re.M | re.I,
)
# a shell command with a flag is code wherever it sits in a sentence
_SHELL = re.compile(
    r"(?<![\w-])(?:ls|grep|awk|sed|cut|chmod|chown|sudo|curl|wget|ssh|tar|find|kill)"
    r"\s+-{1,2}[A-Za-z]"
)
# ASCII lookarounds, not \b: "c++" ends in punctuation, and "python程序" has no \b after python
_LANGUAGE = re.compile(
    r"(?<![A-Za-z0-9_])(?:python|javascript|typescript|java|c\+\+|c#|golang|rust|kotlin|swift|php|ruby|scala"
    r"|sql|bash|shell script|powershell|haskell|matlab|html|css|react|django|pandas|numpy"
    r"|node\.js|regex|regular expression|json|yaml|dockerfile|kubernetes|api)(?![A-Za-z0-9_+#])",
    re.I,
)
_TASK = re.compile(
    r"\b(?:code|coding|program|programming|function|method|script|class|bug|debug|error"
    r"|exception|compile|compiler|implement|algorithm|query|snippet|refactor|unit tests?"
    r"|library|module|component|variable|loop|syntax|endpoint|regex|parse|stack trace)\b"
    # the same words in the arena's other big languages (zh, ja, es/pt, ru, de/fr)
    r"|代码|程序|编程|函数|脚本|コード|プログラム|関数|c[oó]digo|programa|funci[oó]n|fun[cç][aã]o"
    r"|код|программ|функци|скрипт|Programm|Funktion|fonction|programme",
    re.I,
)


def is_code(text: str | None) -> bool:
    """True when ``text`` contains or asks for program code (see module docstring)."""
    if not text:
        return False
    if _FENCE.search(text) or _STACK.search(text) or _SHELL.search(text):
        return True
    if len(_CODE_LINE.findall(text)) >= 2:
        return True
    return bool(_LANGUAGE.search(text) and _TASK.search(text))
