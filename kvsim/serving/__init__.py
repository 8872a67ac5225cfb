"""Several requests through one paged pool: request lists, the requests engine, its records, saved runs, waste.

Imports engine, models, caches and core; never costs or the CLI."""
