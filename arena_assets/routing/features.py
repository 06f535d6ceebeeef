"""A prompt's feature vector x for P2L: embedding + topic labels + language + length.

x is built per distinct first prompt:

- the embedding (``prompt_embeddings``) projected on its first principal components (fitted
  once on a seeded sample of training prompts and kept with the model, so every month of a
  model reads prompts the same way), each component standardised;
- the prompt-level topic labels (hard-prompt criteria, math, creative writing, code,
  instruction-following score, vision categories), standardised; a missing label (not
  labelled, failed parse) takes its training mean, i.e. contributes nothing. Answer labels
  (refusal) are left out: a router sees the prompt before any answer exists;
- the language, one-hot over the languages with at least ``min_language_share`` of the
  training prompts (the rest share the all-zero row);
- the length, log(1 + characters), standardised.

Everything is numpy; ``FeatureSpace.to_dict`` / ``from_dict`` round-trip it through JSON.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import polars as pl

# prompt-level labels of topic_labels (labels.schema) the model reads, in this order
LABEL_FEATURES = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
    "math",
    "creative_writing",
    "code",
    "if_score",
    "is_vision",
    "vision_captioning",
    "vision_ocr",
    "vision_entity_recognition",
    "vision_humor",
    "vision_homework",
    "vision_diagram",
    "vision_creative_writing",
)


@dataclass(frozen=True)
class FeatureConfig:
    components: int = 64  # principal components of the embedding kept
    pca_sample: int = 20_000  # prompts the components are fitted on (seeded sample)
    min_language_share: float = 0.01
    max_languages: int = 20
    seed: int = 0


@dataclass
class FeatureSpace:
    """What turns a prompt frame into x; fitted once, stored with the model."""

    embedder: str
    embed_mean: np.ndarray  # (dim,)
    components: np.ndarray  # (k, dim) principal axes
    comp_scale: np.ndarray  # (k,) sd of each projection on the fit sample
    label_mean: np.ndarray  # (labels,)
    label_scale: np.ndarray
    languages: list[str]
    length_mean: float
    length_scale: float
    names: list[str] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return len(self.names)

    # -- fit / apply ----------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        prompts: pl.DataFrame,
        embeddings: np.ndarray,
        embedder: str,
        cfg: FeatureConfig = FeatureConfig(),
    ) -> FeatureSpace:
        """``prompts``: one row per prompt with ``language``, ``prompt_chars`` and the
        label columns it has; ``embeddings`` (prompts × dim) in the same order."""
        n = embeddings.shape[0]
        rng = np.random.default_rng(cfg.seed)
        rows = (
            np.sort(rng.choice(n, cfg.pca_sample, replace=False))
            if n > cfg.pca_sample
            else np.arange(n)
        )
        sample = embeddings[rows].astype(np.float64)
        mean = sample.mean(axis=0)
        k = max(0, min(cfg.components, sample.shape[0] - 1, sample.shape[1]))
        if k:
            # exact SVD of the (<= 20k x dim) sample: deterministic, no solver randomness
            _, _, vt = np.linalg.svd(sample - mean, full_matrices=False)
            comps = vt[:k]
            signs = np.sign(comps[np.arange(k), np.abs(comps).argmax(axis=1)])  # fixed sign
            comps = comps * signs[:, None]
            proj = (sample - mean) @ comps.T
            scale = proj.std(axis=0)
        else:
            comps, scale = np.zeros((0, embeddings.shape[1])), np.zeros(0)
        labels = _labels(prompts)
        with warnings.catch_warnings():  # a label no prompt has: mean 0, scale 1
            warnings.simplefilter("ignore", RuntimeWarning)
            lab_mean = (
                np.nan_to_num(np.nanmean(labels, axis=0)) if n else np.zeros(len(LABEL_FEATURES))
            )
        lab_filled = np.where(np.isnan(labels), lab_mean, labels)
        lab_scale = lab_filled.std(axis=0) if n else np.zeros(len(LABEL_FEATURES))
        share = (
            prompts.get_column("language")
            .fill_null("und")
            .value_counts(sort=True)
            .with_columns((pl.col("count") / max(n, 1)).alias("share"))
        )
        langs = sorted(
            share.filter(pl.col("share") >= cfg.min_language_share)
            .head(cfg.max_languages)
            .get_column("language")
            .to_list()
        )
        length = _length(prompts)
        space = cls(
            embedder,
            mean,
            comps,
            np.where(scale > 1e-12, scale, 1.0),
            lab_mean,
            np.where(lab_scale > 1e-12, lab_scale, 1.0),
            langs,
            float(length.mean()) if n else 0.0,
            float(length.std()) if n and length.std() > 0 else 1.0,
        )
        space.names = (
            [f"pc{i}" for i in range(k)]
            + list(LABEL_FEATURES)
            + [f"lang:{lg}" for lg in langs]
            + ["log_chars"]
        )
        return space

    def transform(self, prompts: pl.DataFrame, embeddings: np.ndarray) -> np.ndarray:
        """x for each prompt row (float64, prompts × dim)."""
        n = prompts.height
        parts = []
        if self.components.shape[0]:
            # in blocks of rows: a float64 copy of ~1M embeddings at once would be GBs
            proj = np.empty((n, self.components.shape[0]))
            for start in range(0, n, 65536):
                block = embeddings[start : start + 65536].astype(np.float64) - self.embed_mean
                proj[start : start + 65536] = block @ self.components.T
            parts.append(proj / self.comp_scale)
        labels = _labels(prompts)
        labels = np.where(np.isnan(labels), self.label_mean, labels)
        parts.append((labels - self.label_mean) / self.label_scale)
        lang = prompts.get_column("language").fill_null("und").to_list()
        onehot = np.zeros((n, len(self.languages)))
        pos = {lg: i for i, lg in enumerate(self.languages)}
        for r, lg in enumerate(lang):
            if lg in pos:
                onehot[r, pos[lg]] = 1.0
        parts.append(onehot)
        parts.append(((_length(prompts) - self.length_mean) / self.length_scale)[:, None])
        return np.hstack(parts) if n else np.zeros((0, self.dim))

    # -- storage --------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "embedder": self.embedder,
            "embed_mean": self.embed_mean.tolist(),
            "components": self.components.tolist(),
            "comp_scale": self.comp_scale.tolist(),
            "label_mean": self.label_mean.tolist(),
            "label_scale": self.label_scale.tolist(),
            "languages": list(self.languages),
            "length_mean": self.length_mean,
            "length_scale": self.length_scale,
            "names": list(self.names),
        }

    @classmethod
    def from_dict(cls, d: dict) -> FeatureSpace:
        dim = len(d["embed_mean"])
        return cls(
            d["embedder"],
            np.asarray(d["embed_mean"], float),
            np.asarray(d["components"], float).reshape(-1, dim),
            np.asarray(d["comp_scale"], float),
            np.asarray(d["label_mean"], float),
            np.asarray(d["label_scale"], float),
            list(d["languages"]),
            float(d["length_mean"]),
            float(d["length_scale"]),
            list(d["names"]),
        )


def _labels(prompts: pl.DataFrame) -> np.ndarray:
    """(prompts × labels) floats, NaN where a label is missing or the column is absent."""
    cols = []
    for c in LABEL_FEATURES:
        if c in prompts.columns:
            cols.append(prompts.get_column(c).cast(pl.Float64).fill_null(np.nan).to_numpy())
        else:
            cols.append(np.full(prompts.height, np.nan))
    return np.stack(cols, axis=1) if prompts.height else np.zeros((0, len(LABEL_FEATURES)))


def _length(prompts: pl.DataFrame) -> np.ndarray:
    return np.log1p(prompts.get_column("prompt_chars").fill_null(0).cast(pl.Float64).to_numpy())
