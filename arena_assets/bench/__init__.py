"""BenchBuilder: hard, diverse bench prompts from a month's labelled prompts, decontaminated
against earlier benches. Pure functions, no Dagster (see ``builder.build_benches``)."""
