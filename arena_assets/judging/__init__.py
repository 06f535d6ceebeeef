"""Model answers, LLM-judge verdicts, judge summaries and bench-vs-human metrics.

Pure functions, no Dagster: ``answers`` (candidate config, reasoning split, answer
features, Arena-Hard answer import), ``verdicts`` (judge prompts, parsers, judgment
imports), ``summary`` (scores, ensembles, Bradley-Terry and style control on judge
battles, bias report), ``metrics`` (separability, agreement, Spearman, Kendall, Brier).
"""
