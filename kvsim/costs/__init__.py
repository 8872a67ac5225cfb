"""What a model costs: the KV memory formula, presets of real models, hardware peaks, the roofline, GQA.

Imports engine, models, caches and core; never serving or the CLI."""
