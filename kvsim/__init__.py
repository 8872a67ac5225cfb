"""kvsim: the engine. A small transformer run token by token under several KV-cache policies,
with exact counts, timings and frozen step records. Torch + numpy only: never Qt (see ``ui/``)."""

__version__ = "0.1.0"
