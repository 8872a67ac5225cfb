"""The attention layers beside the standard one (``kvsim.models.transformer``), one family per module: multi-head
latent attention (``mla``, DeepSeek's compressed K/V), the hybrid linear-attention family's Gated DeltaNet and gated
attention (``hybrid``, Qwen3-Next) and cross-layer KV sharing (``cla``). Each layer keeps the declared cache hooks
(``kvsim.caches.base``), so every cache policy runs on it."""
