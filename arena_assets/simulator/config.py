"""Knobs of the simulated arena and the fixed vocabularies (categories, languages)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

TEXT_CATEGORIES = (
    "coding",
    "math",
    "creative_writing",
    "instruction_following",
    "hard_multistep",
    "chit_chat",
)
VISION_CATEGORIES = ("captioning", "ocr", "entity_recognition", "humor", "homework", "diagram")
CATEGORIES = TEXT_CATEGORIES + VISION_CATEGORIES

# ISO 639-1 codes; the share is the platform's traffic mix for a user's main language.
LANGUAGES = ("en", "zh", "ru", "es", "de", "fr", "ja", "pt", "ko", "it")
LANGUAGE_SHARE = (0.44, 0.12, 0.08, 0.06, 0.06, 0.06, 0.05, 0.05, 0.04, 0.04)

# Typical answer length (characters) before the model's verbosity multiplier.
BASE_ANSWER_CHARS = {
    "coding": 700,
    "math": 500,
    "creative_writing": 650,
    "instruction_following": 450,
    "hard_multistep": 800,
    "chit_chat": 250,
    "captioning": 350,
    "ocr": 250,
    "entity_recognition": 300,
    "humor": 300,
    "homework": 550,
    "diagram": 500,
}


@dataclass(frozen=True)
class WorldConfig:
    """Everything that shapes the hidden truth and the noise in the logs.

    Pure Bradley-Terry votes on θ: ``category_skill_spread=0, style_strength=0,
    position_bias=0, abusive_fraction=0, hardness_gain=0, cautious_fraction=0`` (ties keep the expected score equal to the BT
    probability, so BT with ties as half wins stays consistent; see ``votes.py``).
    """

    n_models: int = 30
    n_users: int = 2000
    first_month: str = "2024-01"  # models released "at launch" appear from this month
    initial_model_share: float = 0.6  # the rest are released over the following months
    release_span_months: int = 12
    theta_mean: float = 1000.0
    theta_sd: float = 100.0
    category_skill_spread: float = 40.0  # sd of per-category offsets (Elo points)
    vision_fraction: float = 0.4  # share of models that accept images
    abusive_fraction: float = 0.01  # share of users that are abusive voters
    style_strength: float = 0.5  # logit gain per unit of normalized style difference
    position_bias: float = 0.05  # logit bonus of the left (model_a) side
    tie_rate: float = 0.2  # tie probability between equal models (scaled down as they differ)
    bothbad_rate: float = 0.35  # share of ties reported as "both bad"
    battle_share: float = 0.55  # sessions that are side-by-side battles (rest: direct chat)
    anony_share: float = 0.9  # battles with hidden model names
    vision_prompt_rate: float = 0.15  # sessions with an image (vision categories)
    malformed_rate: float = 0.004  # junk lines per valid event line
    pii_rate: float = 0.03  # user turns carrying a planted PII item
    duplicate_rate: float = 0.04  # prompts repeated exactly from an earlier session
    near_duplicate_rate: float = 0.02  # prompts repeated with a small edit
    popular_rate: float = 0.03  # "hi" / "hello"-like prompts
    self_mention_rate: float = 0.03  # answers where the model states an identity
    toxic_rate: float = 0.01  # prompts with a planted toxic marker phrase
    # composed prompts followed by pasted code or config of 2,000+ chars (simulator/paste.py:
    # 8 of the 100 real 2024 first prompts in ../shared/real are that long)
    long_paste_rate: float = 0.08
    max_turns: int = 3
    hardness_gain: float = (
        0.6  # skill gap × (1 + gain·(criteria − 3)/4): hard prompts separate more
    )
    cautious_fraction: float = 0.2  # share of models that refuse prompts with would_refuse
    refusal_rate: float = 0.85  # chance that a cautious model refuses such a prompt
    refusal_penalty: float = 300.0  # Elo points a refusing side loses in the vote
    # vote rigging (simulator/rigging.py), all off by default, so a seed's logs are the
    # same as without them:
    # battles served without a vote logged as "served" events (in served-*.jsonl files)
    served_events: bool = False
    # every event also carries "device_id", and "ip" next to "user_id"
    identity_fields: bool = False
    # share of users moved onto shared networks (campus /24s, some behind one NAT address)
    shared_network_share: float = 0.0
    # planted vote-rigging attacks (rigging.Attack), each in its own month and file
    attacks: tuple = ()
    # per-prompt skill offsets (prompt_skill.py): sd (Elo) of a low-rank model x topic
    # interaction (plus half as much model x language); 0 = off, every output unchanged
    prompt_skill_spread: float = 0.0
    prompt_skill_rank: int = 3
    extra: dict = field(default_factory=dict)  # free-form, recorded in the truth README

    def to_dict(self) -> dict:
        out = asdict(self)
        # the rigging knobs appear only when set: a seed that sets none keeps its world.json
        for key, default in (
            ("served_events", False),
            ("identity_fields", False),
            ("shared_network_share", 0.0),
            ("attacks", ()),
        ):
            if out[key] in (default, []):
                del out[key]
        return out
