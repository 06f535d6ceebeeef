"""Model answers, LLM-judge verdicts, judge summaries and bench-vs-human metrics.

Pure functions, no Dagster: ``protocol`` (Arena-Hard-Auto v0.1 / v2: caps, verdict rules,
baselines), ``judge_prompts`` (the judge's texts: ours, or Arena-Hard-Auto's read from a
checkout), ``arena_hard`` (the anchor's rows, scores, intervals and style-controlled win
rate), ``answers`` (candidate config, reasoning split, answer features, Arena-Hard answer
import), ``verdicts`` (judge prompts, the judgment frame), ``readers`` (every published
judgment layout), ``layout`` (a bench in Arena-Hard's files, both ways), ``summary``
(scores, Bradley-Terry and style control on judge battles, bias report), ``metrics``
(separability, agreement, Spearman, Kendall, Brier; the bench board), ``board_report``.
"""
