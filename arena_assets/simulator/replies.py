"""The simulated arena's answers as (HTTP status, JSON body), whoever asks: a chat
completion or an embeddings call over HTTP (``endpoint.py``), or a line of a Batch-API job
(``batches.py``), so a batch answers exactly what the online route answers.
"""

from __future__ import annotations

import base64
import random
import time

import numpy as np

from arena_assets.llm.tokens import chat_prompt_tokens, text_tokens, text_tokens_many
from arena_assets.simulator.images import image_name, image_urls
from arena_assets.simulator.labeling import (
    EMBEDDERS,
    TASKS,
    WORLD_MODEL_LABEL_NOISE,
    check_task,
    embed_many,
    find_task,
    label_reply,
)
from arena_assets.simulator.responder import (
    chat_completion,
    garbage,
    has_image,
    message_text,
    request_seed,
)

ERROR_KINDS = {429: "rate_limit_error", 500: "server_error"}


def error_body(status: int, message: str, code: str) -> tuple[int, dict]:
    """An OpenAI-style error reply."""
    kind = ERROR_KINDS.get(status, "invalid_request_error")
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


def chat_reply(ep, body: dict, fault: str) -> tuple[int, dict]:
    """(HTTP status, JSON body) of a chat completion, ``fault`` drawn for it."""
    model, messages = body.get("model"), body.get("messages")
    labeler = model in ep.labelers
    if model not in ep.names and not labeler and model not in ep.judges:
        return error_body(404, f"The model `{model}` does not exist", "model_not_found")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) for m in messages)
    ):
        return error_body(400, "messages must be a non-empty list of objects", "invalid_messages")
    if body.get("stream"):
        return error_body(400, "streaming is not supported by the simulated arena", "unsupported")
    try:  # image parts as a real vision endpoint takes them
        names = [n for n in map(image_name, image_urls(messages)) if n]
    except ValueError as exc:
        return error_body(400, str(exc), "invalid_image_url")
    with ep.lock:
        ep.images.update(names)
    params = {
        k: body[k]
        for k in ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed")
        if k in body
    }
    n = int(body.get("n") or 1)
    seed = request_seed(model, messages, params)
    system = "\n".join(
        message_text(m) for m in messages if m.get("role") in ("system", "developer")
    )
    task = find_task(system)
    if task is None and not system:  # OR-Bench's check: one user message, no system
        task = check_task(" ".join(message_text(m) for m in messages if m.get("role") == "user"))
    if labeler and task not in TASKS:
        return error_body(
            400,
            f"a labeller model needs a system line 'task: <name>' with name in {TASKS}",
            "unknown_task",
        )
    choices = []
    for i in range(n):
        if fault == "garbage":
            content, finish = garbage(random.Random(seed + i)), "stop"
        elif task in TASKS:
            user = [m for m in messages if m.get("role") == "user"]
            content = label_reply(
                task,
                message_text(user[-1]) if user else "",
                model,
                ep.labelers.get(model, WORLD_MODEL_LABEL_NOISE),
                ep.truth_index(),
                any(has_image(m) for m in user),
                names[0][1] if names else None,
            )
            finish = "stop"
        else:
            content, finish, _ = chat_completion(
                ep.world,
                model,
                messages,
                params | {"choice": i} if i else params,
                ep.truth_index(),
                ep.judges,
                ep.battles.get(),
            )
        if fault == "empty":
            content = ""
        elif fault == "truncated":
            content, finish = content[: len(content) // 2], "length"
        choices.append(
            {
                "index": i,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
                "logprobs": None,
            }
        )
    # billed like an OpenAI endpoint (approximate cl100k + per-message framing), the
    # counts the plan (arena_assets.llm.plan) estimates before a run
    prompt_tokens = round(chat_prompt_tokens(messages) * ep.faults.prompt_token_scale)
    # a reply cut at the cap used all of it, as a real endpoint's finish_reason "length"
    # says (callers tell a cut answer by completion_tokens >= max_tokens)
    cap = params.get("max_tokens") or params.get("max_completion_tokens")
    completion_tokens = sum(
        cap
        if c["finish_reason"] == "length" and isinstance(cap, int) and cap > 0
        else text_tokens(c["message"]["content"])
        for c in choices
    )
    return (
        200,
        {
            "id": f"chatcmpl-{seed:016x}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "system_fingerprint": "simulated-arena",
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def embeddings_reply(ep, body: dict, fault: str) -> tuple[int, dict]:
    """(HTTP status, JSON body) of an embeddings call (the "truncated" fault cuts the
    HTTP body: the caller's part)."""
    model, raw = body.get("model"), body.get("input")
    if model not in EMBEDDERS:
        return error_body(
            404,
            f"The model `{model}` does not exist (embedding models: {sorted(EMBEDDERS)})",
            "model_not_found",
        )
    texts = raw if isinstance(raw, list) else [raw]
    if not texts or not all(isinstance(t, str) for t in texts):
        return error_body(
            400, "input must be a string or a non-empty list of strings", "invalid_input"
        )
    dim = body.get("dimensions") or ep.embedding_dim
    if not isinstance(dim, int) or not 8 <= dim <= 4096:
        return error_body(400, "dimensions must be an integer in [8, 4096]", "invalid_dimensions")
    encoding = body.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        return error_body(400, "encoding_format must be float or base64", "unsupported")
    index = ep.truth_index()
    matrix = embed_many(texts, model, dim, index) if fault != "empty" else np.empty((0, dim))
    if fault == "garbage":
        matrix = matrix[:, :3]
    # one polars pass: 64 texts of ~1,000 characters
    tokens = round(sum(text_tokens_many(texts)) * ep.faults.prompt_token_scale)
    return (
        200,
        {
            "object": "list",
            "model": model,
            "data": [
                {"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(_encode(matrix, encoding))
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        },
    )


def _encode(matrix: np.ndarray, encoding: str) -> list[list[float]] | list[str]:
    """A call's vectors (a row each) rounded to 6 places, as servers print them, then as
    float lists or, as the openai client asks by default, base64 of little-endian float32.
    The matrix rounded and cast at once: per vector, numpy's call overhead was ~10 % of the
    simulated arena's CPU for an embeddings call (per float in Python, once, ~40 %)."""
    rounded = np.round(matrix, 6)
    if encoding == "base64":
        raw = rounded.astype("<f4")
        return [base64.b64encode(row.tobytes()).decode() for row in raw]
    return rounded.tolist()
