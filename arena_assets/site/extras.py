"""The month page's sections below the overall board: movers, history, style
coefficients, the bench and its agreement with the votes, the data card, downloads."""

from __future__ import annotations

import polars as pl
from markupsafe import Markup

from arena_assets.site.names import board_title
from arena_assets.site.render import link, missing, num, slug
from arena_assets.site.tables import movers

HISTORY_TOP = 10
BASELINE_CELL = Markup('{} <span class="badge">baseline</span>')
COEF_DIGITS = 3  # style coefficients and their intervals (logit per standard deviation)

AGREEMENT = (  # bench_vs_human key -> (name, what it says)
    ("n_models", "Shared models", "models on both boards"),
    ("spearman", "Spearman", "rank correlation of the two orders"),
    ("kendall", "Kendall", "share of pairs in the same order, rescaled to [-1, 1]"),
    (
        "agreement_with_confidence",
        "Agreement with confidence",
        "pairs the votes separate that the bench separates the same way",
    ),
    ("separability_bench", "Separability (bench)", "pairs whose bench intervals do not overlap"),
    ("separability_human", "Separability (votes)", "pairs whose arena intervals do not overlap"),
    (
        "brier",
        "Brier score",
        "error of the bench's win forecasts for the votes' order (lower is better)",
    ),
)


def month_extras(site, tables, downloads: list[str]) -> tuple[dict, list]:
    """Template context of the month page's extra sections, and their figure jobs."""
    jobs: list = []
    ctx: dict = {"previous_month": site.previous_month}
    overall = site.plain().get("overall")
    m = (
        movers(
            overall.ranked,
            site.previous,
            month_votes=site.month_votes,
            previous_votes=site.previous_votes,
        )
        if overall is not None
        else None
    )
    ctx["movers"] = (
        []
        if m is None
        else [
            (link(f"models/{slug(name)}.html", name), before, now, f"{before - now:+d}")
            for name, before, now in m.up + m.down
        ]
    )
    ctx["new_models"] = [] if m is None or site.previous is None else m.new
    ctx["retired"] = [] if m is None else m.retired
    ctx["movers_note"] = (
        "Rank (UB) among every ranked model, deprecated ones included."
        if site.previous is not None
        else "No earlier month: every model on the board is new."
    )
    ctx["history_plot"] = _history(site, jobs)
    ctx.update(_style(site, jobs))
    ctx.update(_bench(site, jobs))
    ctx.update(_card(site))
    ctx["downloads"] = _download_list(downloads)
    return ctx, jobs


def _history(site, jobs) -> str | None:
    h = site.history
    if h is None or h.is_empty():
        return None
    latest = h.filter(pl.col("snapshot_month") == h["snapshot_month"].max())
    leaders = latest.sort(["rating", "model"], descending=[True, False])["model"].head(HISTORY_TOP)
    series = []
    for model in leaders.to_list():
        line = h.filter(pl.col("model") == model).sort("snapshot_month")
        series.append(
            (
                model,
                line["snapshot_month"].to_list(),
                line["rating"].to_list(),
                line["lower"].to_list(),
                line["upper"].to_list(),
            )
        )
    jobs.append(
        (
            "plots/history.svg",
            "history",
            dict(series=series, title=f"Overall score up to {site.month}"),
        )
    )
    return "plots/history.svg"


def _style(site, jobs) -> dict:
    coef = site.style_coefficients
    if coef is None or coef.is_empty():
        return {"style_rows": [], "style_note": "No style-controlled board this month."}
    rows = [  # one precision per column: coefficients to 3 decimals, score points to 1
        (
            r["feature"],
            num(r["coef"], COEF_DIGITS),
            "—"
            if missing(r["lower"])
            else f"{num(r['lower'], COEF_DIGITS)} to {num(r['upper'], COEF_DIGITS)}",
            num(r.get("coef_rating"), 1),
        )
        for r in coef.iter_rows(named=True)
    ]
    good = coef.filter(pl.col("coef").is_not_nan() & pl.col("coef").is_not_null())
    if not good.is_empty():
        jobs.append(
            (
                "plots/style-coefficients.svg",
                "coefficients",
                dict(
                    names=good["feature"].to_list(),
                    coef=good["coef"].to_list(),
                    lower=good["lower"].to_list(),
                    upper=good["upper"].to_list(),
                    title="Style coefficients (overall board)",
                ),
            )
        )
    return {
        "style_rows": rows,
        "style_note": "",
        "style_plot": "plots/style-coefficients.svg" if not good.is_empty() else None,
    }


def _bench(site, jobs) -> dict:
    b = site.bench
    if b is None or b.is_empty():
        return {"bench_rows": [], "bench_note": f"No bench leaderboard for {site.month}."}
    b = b.sort(["win_rate", "model"], descending=[True, False], nulls_last=True)
    several = "category" in b.columns and b["category"].n_unique() > 1
    if several:  # one block per question category (Arena-Hard v2), each with its baseline
        b = b.sort(["category", "win_rate", "model"], descending=[False, True, False])
    cols = [
        ("Category", "category"),
        ("Model", "model"),
        ("Score (win rate %)", "win_rate"),
        ("Interval", "lower"),
        ("BT rating", "bt_rating"),
        ("Style-controlled", "style_rating"),
        ("Avg tokens", "avg_tokens"),
    ]
    cols = [(h, c) for h, c in cols if c in b.columns and (c != "category" or several)]
    baselines = sorted(set(b["baseline"].drop_nulls())) if "baseline" in b.columns else []
    rows = []
    for r in b.iter_rows(named=True):
        is_baseline = r["model"] == r.get("baseline")
        row = []
        for _, c in cols:
            if c == "model":
                row.append(BASELINE_CELL.format(r["model"]) if is_baseline else r["model"])
            elif c == "win_rate":
                row.append(num(None if missing(r["win_rate"]) else 100 * r["win_rate"], 1))
            elif c == "lower":
                row.append(
                    "baseline: 50 by definition"
                    if is_baseline
                    else "—"
                    if missing(r["lower"]) or missing(r["upper"])
                    else f"{100 * r['lower']:.1f} to {100 * r['upper']:.1f}"
                )
            elif c == "category":
                row.append(r["category"])
            else:
                row.append(num(r[c]))
        rows.append(row)
    jobs.append(
        (
            "plots/bench.svg",
            "win_rate_intervals",
            dict(
                models=b["model"].to_list(),
                rate=b["win_rate"].to_list(),
                lower=b["lower"].to_list(),
                upper=b["upper"].to_list(),
                title=f"Bench {site.month}",
            ),
        )
    )
    ctx = {
        "bench_headers": [h for h, _ in cols],
        "bench_rows": rows,
        "bench_nums": tuple(i for i, (_, c) in enumerate(cols) if c not in ("category", "model")),
        "bench_plot": "plots/bench.svg",
        "bench_note": "Answers of the candidate models to the month's bench prompts, judged "
        f"pairwise against the baseline{'s' if len(baselines) > 1 else ''}"
        f"{' (' + ', '.join(baselines) + ')' if baselines else ''} in both orders"
        + ("; a baseline's row is marked, its score 50 by definition." if baselines else "."),
        "agreement_rows": [],
        "agreement_plot": None,
        "agreement_note": "",
    }
    vs = site.vs_human or {}
    if "error" in vs or not vs:
        ctx["agreement_note"] = vs.get("error", "No human board to compare with.")
        return ctx
    for key, name, what in AGREEMENT:
        value = vs.get(key)
        value = value.get("value") if isinstance(value, dict) else value
        # a count as a whole number, every metric to 3 decimals
        ctx["agreement_rows"].append((name, num(value, 0 if key == "n_models" else 3), what))
    overall = site.plain().get("overall")
    if overall is not None and "bt_rating" in b.columns:
        shared = b.join(overall.ranked.select("model", human="rating"), on="model").drop_nulls(
            ["bt_rating", "human"]
        )
        if shared.height >= 2:
            jobs.append(
                (
                    "plots/bench-vs-human.svg",
                    "bench_vs_human",
                    dict(
                        models=shared["model"].to_list(),
                        bench=shared["bt_rating"].to_list(),
                        human=shared["human"].to_list(),
                        title="Bench vs arena",
                    ),
                )
            )
            ctx["agreement_plot"] = "plots/bench-vs-human.svg"
    return ctx


def _card(site) -> dict:
    card = site.data_card
    skipped = [(board_title(k), why) for k, why in sorted(site.skipped_boards.items())]
    if card is None:
        return {
            "card_rows": [],
            "card_note": "No vote counts for this month: there is no "
            "overall board to count them against (not checked).",
            "skipped_boards": skipped,
            "card_check": "",
        }
    month, upto = card["month"], card["up_to_month"]
    rows = [
        ("Votes in (vote lines read)", num(month["votes_in"]), num(upto["votes_in"])),
        ("Ingest rejects (vote lines)", num(month["ingest_rejects"]), num(upto["ingest_rejects"])),
        ("On the overall board", num(month["shown"]), num(upto["shown"])),
    ]
    for reason in sorted(
        set(month["filtered"]) | set(upto["filtered"]),
        key=lambda r: (-upto["filtered"].get(r, 0), r),
    ):
        rows.append(
            (
                f"Filtered: {reason}",
                num(month["filtered"].get(reason, 0)),
                num(upto["filtered"].get(reason, 0)),
            )
        )
    if upto["kept_without_winner"]:
        rows.append(
            (
                "Kept, no winner recorded",
                num(month["kept_without_winner"]),
                num(upto["kept_without_winner"]),
            )
        )
    rows.append(
        (
            "Kept, with a model the board leaves out",
            num(month["kept_off_board"]),
            num(upto["kept_off_board"]),
        )
    )
    return {
        "card_rows": rows,
        "card_check": card_sentence(card),
        "skipped_boards": skipped,
        "card_note": "",
    }


def card_sentence(card: dict) -> str:
    """What the data card's check found, in one sentence per failure."""
    upto = card["up_to_month"]
    problems = []
    for name, part in (("up to the month", upto), ("in the month", card["month"])):
        if part["votes_in"] != part["accounted"]:
            problems.append(
                f"{name}, {num(part['votes_in'])} votes in but "
                f"{num(part['accounted'])} accounted for"
            )
    used = upto.get("board_used")
    if used is not None and used != upto["shown"]:
        problems.append(
            f"the leaderboard fitted {num(used)} votes, the card counts "
            f"{num(upto['shown'])} on it (rematerialize arena_leaderboard)"
        )
    if problems:
        return "The counts do NOT add up: " + "; ".join(problems) + "."
    fitted = (
        ""
        if used is None
        else f" The leaderboard's own count of the votes it fitted agrees ({num(used)})."
    )
    return (
        "Votes in = ingest rejects + on the board + filtered + kept but unusable: holds." + fitted
    )


DOWNLOADS = {
    "leaderboard-text.json": "arena-catalog layout: {category: {model: {rating, rating_q975, "
    "rating_q025}}}, deprecated models left out",
    "leaderboard-text-style-control.json": "the same, style-controlled",
    "leaderboard-vision.json": "the vision boards, same layout",
    "leaderboard-vision-style-control.json": "the vision boards, style-controlled",
    "boards.csv": "every row of every board (ranked, unranked), both views' ranks",
    "boards.parquet": "the same as Parquet",
    "history.csv": "overall score per month, every model",
    "data_card.json": "the data card's counts",
}


def _download_list(names: list[str]) -> list[tuple[str, str, str]]:
    order = list(DOWNLOADS)
    pairs = [n for n in names if n.startswith("downloads/pairs/")]
    names = sorted(
        (n.removeprefix("downloads/") for n in names if n not in pairs),
        key=lambda n: (order.index(n) if n in order else len(order), n),
    )
    out = [(f"downloads/{n}", n, DOWNLOADS.get(n, "")) for n in names]
    return out + [
        (
            n,
            n.removeprefix("downloads/"),
            "the numbers behind the board's pair "
            "figures (win fraction and battle count without ties, average win rate)",
        )
        for n in sorted(pairs)
    ]
