"""One page per model of the month: registry facts, its row on every board, its overall
score month by month, and its head-to-heads (empirical beside predicted win rate)."""

from __future__ import annotations

from arena_assets.site.matrices import head_to_heads
from arena_assets.site.names import board_order, reason_sentence, slug
from arena_assets.site.render import board_link, ci, link, num, page, safe_url, sig, signed
from arena_assets.site.tables import ModelInfo, category_ranks

HISTORY_BATCH = 25


def _models(tables) -> list[str]:
    names = set()
    for table in tables.values():
        names.update(table.rows["model"].to_list())
        names.update(m for m, _ in table.hidden)
    return sorted(names)


def _overall_rows(tables) -> dict[str, dict]:
    table = tables.get(("overall", False))
    return {} if table is None else {r["model"]: r for r in table.rows.iter_rows(named=True)}


def _overall_text(tables, rows: dict[str, dict], model: str) -> str:
    table = tables.get(("overall", False))
    if table is None:
        return "no overall board this month"
    r = rows.get(model)
    if r is None:
        hidden = dict(table.hidden)
        if model in hidden:
            return f"not shown: {num(hidden[model])} kept votes, under the board's minimum"
        return "not on the overall board"
    if r["status"] != "ranked":
        return (
            f"unranked, because {reason_sentence(r['reason'])} "
            f"({num(r['votes_off_board'])} kept votes, none on the board)"
        )
    rank = r["rank_all"] if r["deprecated"] else r["rank"]
    return (
        f"Rank (UB) {rank} · score {num(r['rating'])} "
        f"({ci(r['rating'], r['lower'], r['upper'])}) · {num(r['votes'])} votes"
    )


def model_pages(site, tables, options) -> tuple[dict[str, bytes], list]:
    files, jobs, histories = {}, [], []
    overall = site.plain().get("overall")
    ratings = overall.ratings() if overall is not None else {}
    history = (
        {
            k[0]: v
            for k, v in site.history.sort("snapshot_month")
            .partition_by("model", as_dict=True)
            .items()
        }
        if site.history is not None
        else {}
    )
    order = {k: i for i, k in enumerate(board_order({k for k, _ in tables}))}
    ranks = category_ranks({k: t for (k, s), t in tables.items() if not s})
    overall_rows = _overall_rows(tables)
    for model in _models(tables):
        name = slug(model)
        info = site.registry.get(model, ModelInfo())
        categories = []
        for r in sorted(ranks.get(model, []), key=lambda r: order.get(r["board"], 0)):
            ranked = r["status"] == "ranked"
            categories.append(
                (
                    board_link(r["board"], "../"),
                    r["rank"]
                    if ranked
                    else f"unranked: {reason_sentence(r['reason'])} "
                    f"({num(r['votes_off_board'])} kept votes here)",
                    signed(r["delta"])[0],
                    num(r["rating"]),
                    ci(r["rating"], r["lower"], r["upper"]),
                    num(r["votes"]),
                )
            )
        history_rows, plot = [], None
        mine = history.get(model)
        if mine is not None and not mine.is_empty():
            history_rows = [
                (
                    r["snapshot_month"],
                    num(r["rating"]),
                    ci(r["rating"], r["lower"], r["upper"]),
                    r["rank_ub"],
                    num(r["battles"]),
                )
                for r in mine.iter_rows(named=True)
            ]
            plot = f"plots/model-{name}.svg"
            histories.append(
                (
                    plot,
                    (
                        model,
                        mine["snapshot_month"].to_list(),
                        mine["rating"].to_list(),
                        mine["lower"].to_list(),
                        mine["upper"].to_list(),
                    ),
                    f"{model}: overall score per month",
                )
            )
        h2h = []
        if overall is not None and overall.pairs is not None:
            for r in head_to_heads(overall.pairs, model, ratings).iter_rows(named=True):
                diff = (
                    None
                    if r["predicted"] is None
                    else f"{100 * (r['empirical'] - r['predicted']):+.1f} pts"
                )
                h2h.append(
                    (
                        link(f"{slug(r['opponent'])}.html", r["opponent"]),
                        num(r["battles"]),
                        num(r["wins"]),
                        num(r["ties"]),
                        num(r["losses"]),
                        f"{100 * r['empirical']:.1f} %",
                        "—" if r["predicted"] is None else f"{100 * r['predicted']:.1f} %",
                        diff or "—",
                    )
                )
        files[f"models/{name}.html"] = page(
            "model.html",
            site_name=options.site_name,
            month=site.month,
            up="../",
            home="../../",
            title=model,
            model=model,
            info=info,
            link=safe_url(info.link),
            deprecated=model in site.deprecated,
            overall_text=_overall_text(tables, overall_rows, model),
            categories=categories,
            history_rows=history_rows,
            history_plot=f"../{plot}" if plot else None,
            h2h=h2h,
            sig=sig,
        )
    # the history figures in batches (one reused figure each), a few per worker process
    for start in range(0, len(histories), HISTORY_BATCH):
        batch = histories[start : start + HISTORY_BATCH]
        jobs.append(
            (
                tuple(p for p, _, _ in batch),
                "histories",
                dict(series=[s for _, s, _ in batch], titles=[t for _, _, t in batch]),
            )
        )
    return files, jobs
