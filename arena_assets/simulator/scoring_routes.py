"""The simulated arena's scoring routes: ``POST /v1/moderations`` (OpenAI's Moderation API)
and vLLM's Pooling API for reward models (``POST /pooling``, also under ``/v1``).

A mixin of the endpoint's request handler (``endpoint._Handler``): the routes use its
plumbing (``self.endpoint``, ``_send``, ``_error``) and take the fault drawn for the
request like every POST route.
"""

from __future__ import annotations

import time

from arena_assets.evaluators.transcripts import side_text
from arena_assets.llm.tokens import chat_prompt_tokens, text_tokens
from arena_assets.simulator.battle_judge import pooling_values, reward_score
from arena_assets.simulator.responder import message_text, moderation_result, request_seed


class ScoringRoutes:
    """Moderation and reward-model routes (see the module docstring)."""

    def _moderations(self, body: dict, fault: str) -> None:
        raw = body.get("input")
        inputs = raw if isinstance(raw, list) else [raw]
        texts = [
            x if isinstance(x, str) else (x.get("text", "") if isinstance(x, dict) else "")
            for x in inputs
        ]
        results = [moderation_result(t) for t in texts]
        if (
            fault == "garbage"
        ):  # a plausible-looking but wrong answer: nothing flagged, scores missing
            results = [{"flagged": False, "categories": {}, "category_scores": {}} for _ in texts]
        elif fault == "empty":
            results = []
        seed = request_seed("moderation", texts)
        self._send(
            200,
            {
                "id": f"modr-{seed:016x}",
                "model": body.get("model") or "simulated-moderation",
                "results": results,
            },
            cut=fault == "truncated",
        )

    def _pooling(self, body: dict, fault: str) -> None:
        """vLLM's Pooling API for reward models: ``messages`` (one conversation) or
        ``input`` (text or texts) -> one reward per input, as ``data[i].data``."""
        ep = self.endpoint
        model = body.get("model")
        if model not in ep.reward_models:
            self._error(
                404,
                f"The model `{model}` does not exist (reward models: {sorted(ep.reward_models)})",
                "model_not_found",
            )
            return
        messages, raw = body.get("messages"), body.get("input")
        if isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages):
            # the whole conversation: the first prompt, and the side's answers with the
            # later turns between them (what the battle truth is keyed and scored on)
            items = [
                side_text([{"role": m.get("role"), "content": message_text(m)} for m in messages])
            ]
        elif isinstance(raw, str) or (
            isinstance(raw, list) and raw and all(isinstance(t, str) for t in raw)
        ):
            items = [("", t) for t in (raw if isinstance(raw, list) else [raw])]
        else:
            self._error(
                400,
                "pooling needs messages (a conversation) or input (text or texts)",
                "invalid_input",
            )
            return
        truth, bias = ep.battles.get(), ep.reward_models[model]
        scores = [
            reward_score(truth, key=ep.answer_key, question=q, answer=a, bias=bias, model=model)
            for q, a in items
        ]
        data = [] if fault == "empty" else pooling_values(scores)
        if fault == "garbage":
            data = [{"index": d["index"], "object": "pooling", "data": "nan"} for d in data]
        # billed as the chat route bills (approximate cl100k, a conversation with its
        # message framing): what the plan (llm.plan) counts for a reward model's calls
        tokens = (
            chat_prompt_tokens(messages)
            if isinstance(messages, list) and messages
            else sum(text_tokens(t) for t in (raw if isinstance(raw, list) else [raw]))
        )
        tokens = round(tokens * ep.faults.prompt_token_scale)  # another tokenizer, if set
        self._send(
            200,
            {
                "id": f"pool-{request_seed(model, items):016x}",
                "object": "list",
                "created": int(time.time()),
                "model": model,
                "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
            cut=fault == "truncated",
        )
