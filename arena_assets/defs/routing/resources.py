"""The routing stage's own settings: the monthly P2L fit, its boards and the router's prices."""

from __future__ import annotations

import json

import dagster as dg

from arena_assets.routing.boards import BoardOptions
from arena_assets.routing.p2l import P2LConfig


class RoutingSettings(dg.ConfigurableResource):
    """How the monthly P2L model is fitted and what the router may spend.

    ``router_prices``: a JSON object {model: price per call, in any unit}; models without
    a price are left out of cost-aware routing (argmax routes over every model).
    ``router_budgets``: comma-separated budgets in the same unit (empty: the quartiles
    of the prices)."""

    p2l_loss: str = "bt"  # bt (ties as the boards count them) | grk (four outcomes)
    p2l_tie_mode: str = "half"  # bt only: half | drop_bothbad | drop (as FitOptions)
    p2l_rank: int = 8
    p2l_replay_months: int = 6
    p2l_max_battles: int = 1_000_000
    # below this many training battles a model keeps W's row at 0 (the marginal rating only)
    p2l_min_model_battles: int = 100
    p2l_bootstrap_rounds: int = 100
    p2l_min_set_prompts: int = 20
    router_prices: str = ""
    router_budgets: str = ""
    seed: int = 0

    def p2l_config(self) -> P2LConfig:
        return P2LConfig(
            loss=self.p2l_loss.strip() or "bt",
            tie_mode=self.p2l_tie_mode,
            rank=self.p2l_rank,
            min_model_battles=self.p2l_min_model_battles,
            seed=self.seed,
        )

    def board_options(self) -> BoardOptions:
        return BoardOptions(
            rounds=self.p2l_bootstrap_rounds, min_prompts=self.p2l_min_set_prompts, seed=self.seed
        )

    def prices(self) -> dict[str, float]:
        raw = self.router_prices.strip()
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"ARENA_ROUTER_PRICES must be a JSON object {{model: price}}: {exc}"
            ) from None
        if not isinstance(value, dict) or not all(
            isinstance(v, int | float) and v >= 0 for v in value.values()
        ):
            raise ValueError("ARENA_ROUTER_PRICES must map each model to a price >= 0")
        return {str(k): float(v) for k, v in value.items()}

    def budgets(self) -> list[float] | None:
        raw = [p.strip() for p in self.router_budgets.split(",") if p.strip()]
        try:
            return [float(p) for p in raw] or None
        except ValueError:
            raise ValueError(
                f"ARENA_ROUTER_BUDGETS must be numbers separated by commas, got "
                f"{self.router_budgets!r}"
            ) from None


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "routing_settings": RoutingSettings(
                p2l_loss=dg.EnvVar("ARENA_P2L_LOSS"),
                p2l_rank=dg.EnvVar.int("ARENA_P2L_RANK"),
                p2l_replay_months=dg.EnvVar.int("ARENA_P2L_REPLAY_MONTHS"),
                p2l_max_battles=dg.EnvVar.int("ARENA_P2L_MAX_BATTLES"),
                p2l_min_model_battles=dg.EnvVar.int("ARENA_P2L_MIN_MODEL_BATTLES"),
                p2l_bootstrap_rounds=dg.EnvVar.int("ARENA_P2L_BOOTSTRAP_ROUNDS"),
                router_prices=dg.EnvVar("ARENA_ROUTER_PRICES"),
                router_budgets=dg.EnvVar("ARENA_ROUTER_BUDGETS"),
            )
        }
    )
