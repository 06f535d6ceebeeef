"""One session: a direct chat (one conversation) or a battle (two conversations + a vote).

The session picks its first prompt (fresh, popular greeting, exact or near duplicate of an
earlier prompt of the month), plants PII / toxic markers / identity leaks, writes one chat
event per turn and side (the message list grows, same conv_id), then the vote, and records
the truth rows.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass

from arena_assets.simulator.compose import PromptComposer
from arena_assets.simulator.config import TEXT_CATEGORIES, VISION_CATEGORIES
from arena_assets.simulator.ids import IdMaker, image_hash
from arena_assets.simulator.lexicon import (
    LEX,
    PLANTED_PII_TYPES,
    SENTENCE_SEP,
    TOXIC_MARKERS,
    fake_pii,
)
from arena_assets.simulator.paste import pasted_material
from arena_assets.simulator.prompt_skill import PromptSkills
from arena_assets.simulator.rigging import RIG_KINDS, identity_fields, rig_outcome, served_salt
from arena_assets.simulator.text import TextMaker
from arena_assets.simulator.truth import TruthSink
from arena_assets.simulator.votes import (
    VOTE_OF_WINNER,
    abusive_outcome,
    difficulty_gain,
    honest_outcome,
    style_logit,
    win_probability,
)
from arena_assets.simulator.world import World

POOL_SIZE = 5000  # earlier prompts a duplicate can copy (bounded: months stream)
TOXIC_KINDS = tuple(TOXIC_MARKERS)


@dataclass
class Prompt:
    prompt_id: str
    text: str
    language: str
    categories: list[str]
    pii: list[tuple[str, str]]  # (pii_type, text)
    toxic: str | None
    labels: dict  # topics.prompt_labels: topic, criteria, would_refuse, ...


def answer_sha(content: str) -> str:
    """Key of an answer in the ``battle_answers`` truth: sha256 of its stripped text."""
    return hashlib.sha256(content.strip().encode()).hexdigest()


class SessionMaker:
    def __init__(
        self,
        world: World,
        month: str,
        seed: int,
        rng: random.Random,
        salts: list[int],
        sinks: dict[str, TruthSink],
        emit: Callable[[dict], None],
        emit_served: Callable[[dict], None] | None = None,
    ) -> None:
        self.world, self.config, self.month, self.seed = world, world.config, month, seed
        self.rng = rng
        self.text = TextMaker(rng)
        self.composer = PromptComposer(rng)
        self.sinks = sinks
        self.emit = emit
        self.event_id = IdMaker("e", salts[0])
        self.conv_id = IdMaker("c", salts[1])
        self.session_id = IdMaker("s", salts[2])
        self.prompt_id = IdMaker("p", salts[3])
        # served events (simulator/rigging.py): ids of their own, salted apart from the rest
        self.emit_served = emit_served
        self.served_id = IdMaker("e", served_salt(seed, month, salts))
        self.images = 0
        self.pool: list[tuple[str, str, str, list[str], bool, dict]] = []
        self.popular_first: dict[str, str] = {}
        avail = world.available(month)
        self.text_pool = avail
        self.vision_pool = [i for i in avail if world.models[i].vision]
        self.stats = {"sessions": 0, "conversations": 0, "events": 0, "votes": 0}
        # planted attacks (rig_plant.py, rig_careful.py): cover votes an account still owes
        # (honest-looking votes on anonymous battles without its model), and what the
        # last battle ended in ("rig", "cover", "served", "vote": a plain vote)
        self.cover: dict[int, int] = {}
        self.rig_left: dict[int, int] = {}  # rigged votes an account has left (absent: no cap)
        self.last, self.last_anony = "", False
        self.prompt_skills = PromptSkills.of(world)  # no effect unless prompt_skill_spread > 0

    # ---- prompts -------------------------------------------------------------------------
    def _plant(self, text: str, lang: str, rate: float, pii: list[tuple[str, str]]) -> str:
        if self.rng.random() < rate:
            kind = self.rng.choice(PLANTED_PII_TYPES)
            item = fake_pii(kind, self.rng)
            pii.append((kind, item))
            text += SENTENCE_SEP[lang] + LEX[lang]["pii"].format(pii=item)
        return text

    def first_prompt(self, lang: str, vision: bool, category: str) -> Prompt:
        cfg, rng = self.config, self.rng
        pid = self.prompt_id()
        u = rng.random()
        row = {
            "prompt_id": pid,
            "month": self.month,
            "duplicate_of": None,
            "near_duplicate_of": None,
            "popular": False,
            "toxic_category": None,
        }
        cats = [category]
        if category in ("coding", "math") and rng.random() < 0.25:
            cats.append("hard_multistep")
        pii: list[tuple[str, str]] = []
        toxic = None
        if u < cfg.popular_rate and not vision:
            text = self.text.greeting(lang)
            cats = ["chit_chat"]
            labels = self.composer.greeting_labels()
            row["popular"] = True
            row["duplicate_of"] = self.popular_first.setdefault(text, pid)
            if row["duplicate_of"] == pid:
                row["duplicate_of"] = None
        elif u < cfg.popular_rate + cfg.duplicate_rate + cfg.near_duplicate_rate and self.pool:
            src_id, src_text, lang, cats, _, labels = self.pool[rng.randrange(len(self.pool))]
            cats = list(cats)
            if u < cfg.popular_rate + cfg.duplicate_rate:
                text = src_text
                row["duplicate_of"] = src_id
            else:
                text = self.text.near_duplicate(src_text, lang)
                row["near_duplicate_of"] = src_id
        else:
            text, labels = self.composer.compose(lang, category)
            if rng.random() < cfg.toxic_rate:
                toxic = rng.choice(TOXIC_KINDS)
                text += SENTENCE_SEP[lang] + rng.choice(TOXIC_MARKERS[toxic]) + "."
                row["toxic_category"] = toxic
                labels = labels | {"would_refuse": True}
            text = self._plant(text, lang, cfg.pii_rate, pii)
            if rng.random() < cfg.long_paste_rate:
                # last, so a client that cuts long prompts keeps the request and any marker
                text += "\n\n" + pasted_material(rng)
            if not pii and not toxic:  # only clean prompts get copied, so truth stays simple
                entry = (pid, text, lang, cats, vision, labels)
                if len(self.pool) < POOL_SIZE:
                    self.pool.append(entry)
                else:
                    self.pool[rng.randrange(POOL_SIZE)] = entry
        row.update(labels)
        row.update(text=text, language=lang, categories=cats, has_pii=bool(pii))
        self.sinks["prompts"].add(row)
        return Prompt(pid, text, lang, cats, pii, toxic, labels)

    # ---- models --------------------------------------------------------------------------
    def _pick_models(self, vision: bool, battle: bool, user: int) -> list[int]:
        pool = self.vision_pool if vision else self.text_pool
        rng = self.rng
        if not battle:
            weights = [self.world.models[i].popularity for i in pool]
            return rng.choices(pool, weights=weights, k=1)
        pair = rng.sample(pool, 2)
        users = self.world.users
        target = int(users.target[user])
        # an always_for voter rerolls until its target shows up most of the time
        if (
            users.kind[user] == "always_for"
            and target in pool
            and target not in pair
            and rng.random() < 0.6
        ):
            pair[rng.randrange(2)] = target
        return pair

    # ---- session -------------------------------------------------------------------------
    def run(
        self,
        user: int,
        start: float,
        battle: bool,
        lang: str,
        vision: bool,
        category_index: int,
        turns: int,
    ) -> None:
        cfg, rng, world = self.config, self.rng, self.world
        users = world.users
        vision = vision and len(self.vision_pool) >= 2
        category = (VISION_CATEGORIES if vision else TEXT_CATEGORIES)[category_index]
        prompt = self.first_prompt(lang, vision, category)
        lang, cats = prompt.language, prompt.categories
        vision = cats[0] in VISION_CATEGORIES and len(self.vision_pool) >= 2
        sides = self._pick_models(vision, battle, user)
        anony = battle and rng.random() < cfg.anony_share
        who = identity_fields(world, user)
        session_id = self.session_id()
        conv_ids = [self.conv_id() for _ in sides]
        msgs: list[list[dict]] = [[] for _ in sides]
        chars = [0] * len(sides)
        marks = [0] * len(sides)
        leaks: list[str | None] = []
        for m in sides:
            if rng.random() < cfg.self_mention_rate:
                other = rng.random() < 0.2
                leak_idx = rng.randrange(len(world.models)) if other else m
                leaks.append(world.models[leak_idx].name)
            else:
                leaks.append(None)
        # a cautious model refuses a would_refuse prompt most of the time (votes.py)
        refused = [
            bool(
                prompt.labels["would_refuse"]
                and world.models[m].cautious
                and rng.random() < cfg.refusal_rate
            )
            for m in sides
        ]
        # a refusal replaces the whole first answer, identity preface included: no leak then
        leaks = [None if no else leak for leak, no in zip(leaks, refused, strict=True)]
        pii_rows: list[tuple[int, str, str]] = [(0, k, t) for k, t in prompt.pii]
        n_images = 0
        t = start
        for turn in range(turns):
            if turn == 0:
                user_msg: dict = {"role": "user", "content": prompt.text}
                if vision:
                    n_img = 2 if rng.random() < 0.1 else 1
                    shows = {k: v for k, v in prompt.labels.items() if k.startswith("vision_")}
                    own = bool(shows.get("vision_homework") or shows.get("vision_diagram"))
                    user_msg["images"] = [self._image(meme_ok=not own) for _ in range(n_img)]
                    n_images += n_img
                    for sha in user_msg["images"]:
                        self.sinks["images"].add(
                            {
                                "sha256": sha,
                                "month": self.month,
                                "prompt_id": prompt.prompt_id,
                                **shows,
                            }
                        )
            else:
                found: list[tuple[str, str]] = []
                text = self._plant(self.text.followup(lang), lang, cfg.pii_rate, found)
                pii_rows += [(2 * turn, k, v) for k, v in found]
                user_msg = {"role": "user", "content": text}
            t += rng.uniform(5.0, 60.0)
            for s, m in enumerate(sides):
                spec = world.models[m]
                preface = None
                if turn == 0 and leaks[s] is not None:
                    leaked = world.model(leaks[s])
                    preface = self.text.identity(
                        lang, rng.choice(leaked.aliases), leaked.organization
                    )
                if turn == 0 and refused[s]:
                    content, n_md = self.composer.refusal(lang), 0
                else:
                    ans = self.text.answer(
                        lang,
                        cats[0],
                        spec.verbosity,
                        spec.markdown,
                        preface,
                        scale=1.0 if turn == 0 else 0.6,
                    )
                    content, n_md = ans.text, ans.markdown
                chars[s] += len(content)
                marks[s] += n_md
                msgs[s].append(user_msg)
                msgs[s].append({"role": "assistant", "content": content})
                self.emit(
                    {
                        "event_id": self.event_id(),
                        "type": "chat",
                        "tstamp": round(t + rng.uniform(1.0, 20.0), 3),
                        **who,
                        "anony": anony,
                        "state": self._state(conv_ids[s], spec.name, msgs[s]),
                    }
                )
            t += 20.0
        self.stats["sessions"] += 1
        self.stats["conversations"] += len(sides)
        for s, m in enumerate(sides):
            for idx, kind, item in pii_rows:
                self.sinks["pii"].add(
                    {
                        "conv_id": conv_ids[s],
                        "month": self.month,
                        "message_index": idx,
                        "pii_type": kind,
                        "text": item,
                    }
                )
            self.sinks["conversations"].add(
                {
                    "conv_id": conv_ids[s],
                    "month": self.month,
                    "session_id": session_id,
                    "mode": "battle" if battle else "chat",
                    "side": ("a", "b")[s] if battle else None,
                    "user_id": users.user_id[user],
                    "model": world.models[m].name,
                    "language": lang,
                    "categories": cats,
                    "prompt_id": prompt.prompt_id,
                    "turns": turns,
                    "n_images": n_images,
                    "has_pii": bool(pii_rows),
                    "toxic": prompt.toxic is not None,
                    "self_mention": leaks[s] is not None,
                    "mentioned_model": leaks[s],
                    "anony": anony,
                    "first_tstamp": round(start, 3),
                    "last_tstamp": round(t, 3),
                    "answer_chars": chars[s],
                    "answer_markdown": marks[s],
                    "refused": refused[s],
                }
            )
        if battle:
            shift = (0.0, 0.0)
            if self.prompt_skills.active:
                off = self.prompt_skills.offsets(prompt.labels["topic"], lang)
                shift = (float(off[sides[0]]), float(off[sides[1]]))
            self._vote(
                user,
                t,
                sides,
                conv_ids,
                msgs,
                chars,
                marks,
                cats[0],
                anony,
                who,
                int(prompt.labels["criteria_count"]),
                refused,
                shift,
            )

    def _vote(
        self,
        user,
        t,
        sides,
        conv_ids,
        msgs,
        chars,
        marks,
        category,
        anony,
        who,
        criteria_count,
        refused,
        shift=(0.0, 0.0),
    ) -> None:
        cfg, rng, world = self.config, self.rng, self.world
        users = world.users
        kind = users.kind[user]
        abusive = kind != "honest"
        self.last_anony = anony
        a, b = (world.models[i] for i in sides)
        rig = kind in RIG_KINDS
        cover = False
        shown = int(users.target[user]) in sides
        if rig and not (anony and shown and self.rig_left.get(user, 1) > 0):
            if anony and not shown and self.cover.get(user, 0) > 0:  # honest-looking cover
                self.cover[user] -= 1
                cover = True
            else:
                self._served(t, a.name, b.name, anony, who)  # not the model it rigs: no vote
                self.last = "served"
                return
        if not abusive and rng.random() >= users.vote_propensity[user]:
            self._served(t, a.name, b.name, anony, who)
            self.last = "served"
            return
        # shift: the prompt's skill offsets (prompt_skill.py), exactly 0.0 when off
        skill_a, skill_b = a.skill(category) + shift[0], b.skill(category) + shift[1]
        p = win_probability(
            skill_a,
            skill_b,
            style_logit(chars[0], chars[1], marks[0], marks[1]),
            cfg,
            difficulty_gain(criteria_count, cfg),
            refused[0],
            refused[1],
        )
        if rig and not cover:
            winner = rig_outcome(kind, world.models[users.target[user]].name, a.name)
        elif abusive and not cover:
            target = world.models[users.target[user]].name if users.target[user] >= 0 else None
            winner = abusive_outcome(rng, kind, target, users.burst_side[user], a.name, b.name)
        else:
            mean_skill = (skill_a + skill_b) / 2.0
            winner = honest_outcome(rng, p, mean_skill, float(users.tie_propensity[user]), cfg)
        event_id = self.event_id()
        tstamp = round(t + rng.uniform(2.0, 40.0), 3)
        self.emit(
            {
                "event_id": event_id,
                "type": VOTE_OF_WINNER[winner],
                "tstamp": tstamp,
                **who,
                "anony": anony,
                "models": ["", ""] if anony else [a.name, b.name],
                "states": [
                    self._state(conv_ids[0], a.name, msgs[0]),
                    self._state(conv_ids[1], b.name, msgs[1]),
                ],
            }
        )
        self.stats["votes"] += 1
        self.last = "cover" if cover else ("rig" if rig else "vote")
        if self.last == "rig" and user in self.rig_left:
            self.rig_left[user] -= 1
        self.sinks["battle_answers"].add(
            {
                "event_id": event_id,
                "month": self.month,
                **{
                    f"answer_sha_{s}": answer_sha(msgs[i][1]["content"]) for i, s in enumerate("ab")
                },
            }
        )
        self.sinks["votes"].add(
            {
                "event_id": event_id,
                "month": self.month,
                "tstamp": tstamp,
                "conv_id_a": conv_ids[0],
                "conv_id_b": conv_ids[1],
                "model_a": a.name,
                "model_b": b.name,
                "winner": winner,
                "user_id": users.user_id[user],
                "abusive": abusive,
                "abuse_kind": "rig_cover" if cover else (kind if abusive else None),
                "anony": anony,
                "category": category,
                "p_a": round(p, 6),
                "len_a": chars[0],
                "len_b": chars[1],
                "md_a": marks[0],
                "md_b": marks[1],
                "criteria_count": criteria_count,
                "refused_a": refused[0],
                "refused_b": refused[1],
            }
        )

    def _served(self, t: float, model_a: str, model_b: str, anony: bool, who: dict) -> None:
        """The impression log's line for a battle that ended without a vote (when the
        world logs them): no random draw, ids from their own maker, its own output, so the
        other events of a seed stay byte-identical whether or not it is on."""
        if self.emit_served is None:
            return
        self.emit_served(
            {
                "event_id": self.served_id(),
                "type": "served",
                "tstamp": round(t + 30.0, 3),
                **who,
                "anony": anony,
                "models": [model_a, model_b],
            }
        )

    @staticmethod
    def _state(conv_id: str, model: str, messages: list[dict]) -> dict:
        return {"conv_id": conv_id, "model_name": model, "offset": 0, "messages": messages}

    def _image(self, meme_ok: bool = True) -> str:
        # a few images are shared memes seen by many users; most are unique uploads. A
        # homework page or a diagram is the user's own upload, never a shared meme (the
        # draws are the same either way: only the image picked differs)
        self.images += 1
        n = 1000 + self.images
        if self.rng.random() < 0.1:
            meme = self.rng.randrange(20)
            n = meme if meme_ok else n
        return image_hash(self.month, self.seed, n)
