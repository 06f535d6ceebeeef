"""Evaluating the evaluators, and the arena's other questions (no Dagster here).

- ``agreement``: how well judges, reward models and simple baselines agree with the
  arena's human votes (PPE's metrics, MT-Bench's agreement), ``sample`` draws the
  stratified battle sample they judge, ``judges`` asks them, ``transcripts`` says what
  they are shown;
- ``refusal``: over-refusal per model on the arena's own traffic (OR-Bench's question, the
  project's own quantity), ``orbench`` runs OR-Bench's published prompt sets, judged by
  OR-Bench's own check and keyword rules (``orbench_check``) and by the project's judge;
- ``yardsticks``: the published figures printed beside ours.

Month steps over the lake: ``arena_assets.pipeline.evaluators``; assets:
``arena_assets.defs.evaluators``.
"""
