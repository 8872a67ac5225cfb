"""The simulator: lanes over one model in lockstep, frozen step records, traces saved and loaded, counts.

Imports models, caches and core; never serving, costs or the CLI."""
