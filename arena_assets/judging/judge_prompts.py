"""The judge's texts by protocol: the project's own wording, or Arena-Hard-Auto's own text
read at run time from the user's arena-hard-auto checkout (``ARENA_ARENA_HARD_DIR``).

A prompt set is what a pairwise judge receives besides the question and the two answers:
a system prompt per question category, the user turn's template(s) and, where the
protocol continues a reply without a label, the follow-up turn. Under an anchor's
protocol name the set is the anchor's, read from its files as data, never imported or
executed, never copied into this project:

=====================  =========================================================================
protocol               where each text comes from (paths inside the checkout)
=====================  =========================================================================
``arena-hard-v0.1``    ``config/judge_config.yaml``: ``system_prompt``, ``prompt_template`` (a
                       list: one user turn each, placeholders ``question_1``, ``answer_1`` (side
                       A), ``answer_2`` (side B)), ``baseline_model``; ``gen_judgment.py``: the
                       one constant user turn it appends after a reply without a label (read
                       with ``ast``). A v0.1-era checkout (e.g. commit 0489bf3) has both files.
``arena-hard-v2``      ``utils/judge_utils.py``: ``JUDGE_SETTINGS`` (per question category its
                       ``system_prompt``, creative writing its own, and its ``baseline``;
                       names such as ``OG_ARENA_HARD_PROMPT`` resolved), read with ``ast``;
                       ``config/arena-hard-v2.0.yaml``: ``prompt_template`` (placeholders
                       ``QUESTION``, ``ANSWER_A``, ``ANSWER_B``). No follow-up: v2 asks once.
``arena-assets-        the project's own wording (``judging.verdicts``), no checkout needed; the
pairwise[-v2]``        first follows v0.1's rules, the second v2's
=====================  =========================================================================

Templates are filled with ``str.format``, as the anchor fills them. Each set has a SHA-256
of its texts (``sha256``), recorded in every judgment row and the asset's metadata with the
set's ``source``; the set itself is kept beside the month's judgments so an export shows
the judge's exact request.
"""

from __future__ import annotations

import ast
import hashlib
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from arena_assets.judging.protocol import FOLLOW_UP, OWN, OWN_V2, V01, V2, get_protocol
from arena_assets.judging.verdicts import (
    PAIRWISE_SYSTEM,
    PAIRWISE_SYSTEM_NO_OWN_ANSWER,
    PAIRWISE_USER,
    PROMPT_VERSION,
)

SETTING = "ARENA_ARENA_HARD_DIR"
V01_CONFIG = "config/judge_config.yaml"
V01_SCRIPT = "gen_judgment.py"
V2_SETTINGS = "utils/judge_utils.py"
V2_CONFIG = "config/arena-hard-v2.0.yaml"
OWN_SOURCE = "arena_assets.judging.verdicts (the project's own wording)"


class PromptSetError(ValueError):
    """A prompt set that cannot be read: one line naming the setting or the file."""


@dataclass(frozen=True)
class JudgePrompts:
    protocol: str
    systems: Mapping[str, str]  # question category -> system prompt
    templates: tuple[str, ...]  # the user turns, placeholders named by ``fields``
    fields: tuple[str, str, str]  # the question's, answer A's and answer B's placeholder
    follow_up: str = ""  # the turn after a reply without a label ("" = none)
    source: str = OWN_SOURCE
    baselines: Mapping[str, str] = field(default_factory=dict)  # the anchor's, per category
    judge_settings: Mapping[str, object] = field(default_factory=dict)  # the anchor's config

    @property
    def sha256(self) -> str:
        """SHA-256 of every text the judge may receive besides the inputs."""
        payload = {
            "systems": dict(sorted(self.systems.items())),
            "templates": list(self.templates),
            "fields": list(self.fields),
            "follow_up": self.follow_up,
        }
        return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()

    @property
    def version(self) -> str:
        """The requests' prompt version (part of the answer cache's key)."""
        if self.protocol in (OWN, OWN_V2):
            return PROMPT_VERSION
        return f"{self.protocol}:{self.sha256[:12]}"

    def system(self, category: str | None) -> str:
        try:
            return self.systems[category or ""]
        except KeyError:
            raise PromptSetError(
                f"{self.source}: no system prompt for question category {category!r} "
                f"(it has {', '.join(sorted(self.systems))})"
            ) from None

    def messages(
        self, question: str, answer_a: str, answer_b: str, category: str | None
    ) -> list[dict]:
        """The judge's request for one game: the system prompt of ``category``, then each
        template filled as the anchor fills it (``str.format``)."""
        values = dict(zip(self.fields, (question, answer_a, answer_b)))
        return [
            {"role": "system", "content": self.system(category)},
            *({"role": "user", "content": t.format(**values)} for t in self.templates),
        ]

    def describe(self) -> dict:
        """What the metadata records: the protocol, where the texts came from, their hash."""
        return {"protocol": self.protocol, "source": self.source, "sha256": self.sha256}

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "protocol": self.protocol,
                "source": self.source,
                "sha256": self.sha256,
                "systems": dict(self.systems),
                "templates": list(self.templates),
                "fields": list(self.fields),
                "follow_up": self.follow_up,
                "baselines": dict(self.baselines),
                "judge_settings": dict(self.judge_settings),
            },
            ensure_ascii=False,
            indent=1,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> JudgePrompts:
        d = json.loads(data)
        out = cls(
            protocol=d["protocol"],
            systems=d["systems"],
            templates=tuple(d["templates"]),
            fields=tuple(d["fields"]),
            follow_up=d.get("follow_up", ""),
            source=d.get("source", ""),
            baselines=d.get("baselines", {}),
            judge_settings=d.get("judge_settings", {}),
        )
        if d.get("sha256") and d["sha256"] != out.sha256:
            raise PromptSetError(f"prompt set of {out.protocol}: its texts do not match its hash")
        return out


def own_prompts(protocol: str = OWN) -> JudgePrompts:
    """The project's own wording under the rules of ``protocol`` (v0.1's: one category,
    the follow-up; v2's: creative writing judged without the judge's own answer first)."""
    rules = get_protocol(protocol).rules
    systems = (
        {V01: PAIRWISE_SYSTEM}
        if rules == V01
        else {"hard_prompt": PAIRWISE_SYSTEM, "creative_writing": PAIRWISE_SYSTEM_NO_OWN_ANSWER}
    )
    return JudgePrompts(
        protocol=get_protocol(protocol).name,
        systems=systems,
        templates=(PAIRWISE_USER,),
        fields=("question", "answer_a", "answer_b"),
        follow_up=FOLLOW_UP if rules == V01 else "",
    )


def judge_prompts(protocol: str, arena_hard_dir: str | Path | None = None) -> JudgePrompts:
    """The prompt set ``protocol`` sends: the project's own for ``arena-assets-pairwise``
    (and ``-v2``); for an Arena-Hard-Auto protocol, the anchor's own text read from the
    checkout at ``arena_hard_dir``, which must then be given (one line naming the setting
    when it is not)."""
    proto = get_protocol(protocol)
    if not proto.anchor_text:
        return own_prompts(proto.name)
    root = str(arena_hard_dir or "").strip()
    if not root:
        raise PromptSetError(
            f"{SETTING} is empty: {proto.name} sends Arena-Hard-Auto's own judge prompts, read "
            f"from your arena-hard-auto checkout; set {SETTING} to that folder, or use "
            f"ARENA_BENCH_PROTOCOL={OWN if proto.rules == V01 else OWN_V2} (the project's own wording)"
        )
    path = Path(root).expanduser()
    if not path.is_dir():
        raise PromptSetError(f"{SETTING}={root!r} is not a folder (an arena-hard-auto checkout)")
    return read_v01(path) if proto.rules == V01 else read_v2(path)


def _file(root: Path, name: str, protocol: str, why: str) -> Path:
    p = root / name
    if not p.is_file():
        raise PromptSetError(
            f"{SETTING}={str(root)!r} has no {name} ({why}, which {protocol} reads)"
        )
    return p


def _placeholders(template: str, fields: tuple[str, ...], where: str) -> None:
    try:
        names = {n for _, n, _, _ in string.Formatter().parse(template) if n is not None}
    except ValueError as exc:
        raise PromptSetError(f"{where}: the template is not a format string ({exc})") from None
    unknown = sorted(names - set(fields))
    if unknown:
        raise PromptSetError(
            f"{where}: the template asks for {', '.join(unknown)}; a bench question is one "
            f"turn judged without a reference ({', '.join(fields)})"
        )


def read_v01(root: Path) -> JudgePrompts:
    """Arena-Hard-Auto v0.1's judge texts from a v0.1-era checkout."""
    cfg_path = _file(root, V01_CONFIG, V01, "v0.1's judge config")
    cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
    system = cfg.get("system_prompt")
    templates = cfg.get("prompt_template")
    templates = [templates] if isinstance(templates, str) else templates
    if (
        not isinstance(system, str)
        or not templates
        or not all(isinstance(t, str) for t in templates)
    ):
        raise PromptSetError(
            f"{cfg_path}: no system_prompt and prompt_template (v0.1's judge texts)"
        )
    fields = ("question_1", "answer_1", "answer_2")
    for t in templates:
        _placeholders(t, fields, str(cfg_path))
    script = _file(root, V01_SCRIPT, V01, "v0.1's judging script: its follow-up turn")
    base = cfg.get("baseline_model")
    return JudgePrompts(
        protocol=V01,
        systems={V01: system},
        templates=tuple(templates),
        fields=fields,
        follow_up=follow_up_turn(script),
        source=f"{cfg_path} (system_prompt, prompt_template); {script} (follow-up)",
        baselines={V01: base} if isinstance(base, str) and base else {},
        judge_settings={
            k: cfg[k]
            for k in ("temperature", "max_tokens", "regex_pattern", "number_of_judgment_attempts")
            if k in cfg
        },
    )


def read_v2(root: Path) -> JudgePrompts:
    """Arena-Hard-Auto v2's judge texts: per-category system prompts and baselines, the
    template of ``config/arena-hard-v2.0.yaml``."""
    proto = get_protocol(V2)
    settings_path = _file(root, V2_SETTINGS, V2, "JUDGE_SETTINGS")
    settings = module_constants(settings_path).get("JUDGE_SETTINGS")
    if not isinstance(settings, dict):
        raise PromptSetError(f"{settings_path}: no JUDGE_SETTINGS dict literal")
    systems, baselines = {}, {}
    for cat in proto.categories:
        entry = settings.get(cat)
        if not isinstance(entry, dict) or not isinstance(entry.get("system_prompt"), str):
            raise PromptSetError(
                f"{settings_path}: JUDGE_SETTINGS has no system_prompt for {cat!r}"
            )
        systems[cat] = entry["system_prompt"]
        if isinstance(entry.get("baseline"), str):
            baselines[cat] = entry["baseline"]
    cfg_path = _file(root, V2_CONFIG, V2, "v2's judge config")
    cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
    template = cfg.get("prompt_template")
    if not isinstance(template, str):
        raise PromptSetError(f"{cfg_path}: no prompt_template")
    fields = ("QUESTION", "ANSWER_A", "ANSWER_B")
    _placeholders(template, fields, str(cfg_path))
    return JudgePrompts(
        protocol=V2,
        systems=systems,
        templates=(template,),
        fields=fields,
        source=f"{settings_path} (JUDGE_SETTINGS); {cfg_path} (prompt_template)",
        baselines=baselines,
        judge_settings={
            k: cfg[k] for k in ("temperature", "max_tokens", "regex_patterns") if k in cfg
        },
    )


def _value(node: ast.AST, names: Mapping[str, object]) -> object:
    """A literal made of strings, numbers, dicts, lists and names already bound to such."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_value(k, names): _value(v, names) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(e, names) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _value(node.left, names) + _value(node.right, names)
    raise ValueError(ast.dump(node)[:80])


def module_constants(path: Path) -> dict[str, object]:
    """The module-level ``NAME = literal`` assignments of a Python file, read with ``ast``
    (the file is never imported or run); assignments of anything else are skipped."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    names[target.id] = _value(node.value, names)
                except (ValueError, TypeError):
                    continue
    return names


def follow_up_turn(path: Path) -> str:
    """The one constant user turn a judging script appends (``{"role": "user", "content":
    "<text>"}``), read with ``ast``: v0.1's request after a reply without a label."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict) or None in node.keys:
            continue
        pairs = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
        role, content = pairs.get("role"), pairs.get("content")
        if (
            isinstance(role, ast.Constant)
            and role.value == "user"
            and isinstance(content, ast.Constant)
            and isinstance(content.value, str)
        ):
            found.append(content.value)
    distinct = list(dict.fromkeys(found))
    if len(distinct) != 1:
        raise PromptSetError(
            f"{path}: expected one constant user turn (v0.1's follow-up), found {len(distinct)}"
        )
    return distinct[0]


def _blob(asset: str, month: str) -> str:
    return f"{asset}/_files/{month}.prompts.json"


def keep_prompts(lake, asset: str, month: str, prompts: JudgePrompts) -> str:
    """The month's prompt set beside its judgments (``<asset>/_files/<month>.prompts.json``),
    so an export renders the judge's exact request; a planning lake writes nothing."""
    return lake.write_blob(asset, f"{month}.prompts.json", prompts.to_json())


def read_kept_prompts(lake, asset: str, month: str) -> JudgePrompts | None:
    """The prompt set kept beside the month's judgments; None where there is none."""
    path = f"{lake.root.rstrip('/')}/{_blob(asset, month)}"
    if not lake.fs.exists(path):
        return None
    with lake.fs.open(path, "rb") as fh:
        return JudgePrompts.from_json(fh.read())
