"""Closed-form FLOPs and bytes moved for one forward step, by component.

A step computes ``new`` positions (query rows) against ``context`` key rows in every layer, and
the LM head on ``out`` positions. Matmul FLOPs use the multiply-add = 2 FLOPs convention, the
same one ``torch.utils.flop_counter`` and LLM-Viewer use, and count exactly what the model
executes (attention scores for the whole T x S block, masked entries included). Element-wise
work (softmax, norms, activations, RoPE) is estimated separately under ``elementwise`` and is not
part of the matmul total that tests hold against torch's counter.

Bytes moved are the roofline kind: weights read once per step, the K/V rows the attention reads,
the new K/V rows written.

A hybrid linear-attention model (``family=qwen3_next``) adds ``recurrence``: its recurrent layers' convolution and
state products, the same for every token whatever n (``_hybrid_step_cost``), and the state read and written once a
step (``state_read``, ``state_write``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models.config import ModelConfig

MATMUL_COMPONENTS = ("qkv_proj", "attn_scores", "attn_values", "out_proj", "mlp", "lm_head")
# a hybrid model's recurrent layers (family=qwen3_next): their short convolution and the state's three products a
# token, matmul FLOPs too; only a hybrid's costs have this key (other families' records stay as they were)
RECURRENCE = "recurrence"


@dataclass(frozen=True)
class StepCost:
    flops: dict[str, int]
    bytes: dict[str, int]

    @property
    def matmul_flops(self) -> int:
        return sum(self.flops[c] for c in MATMUL_COMPONENTS) + self.flops.get(RECURRENCE, 0)

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes.values())

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte moved (the roofline's x axis)."""
        return self.total_flops / max(1, self.total_bytes)


def step_cost(
    cfg: ModelConfig,
    new: int,
    context: int,
    out: int = 1,
    dtype_bytes: int = 4,
    kv_dtype_bytes: float | None = None,
    read: int | None = None,
) -> StepCost:
    """FLOPs and bytes of one forward over ``new`` positions attending to ``context`` rows. ``read``: on a
    sparse-attention model (deepseek_v32), the distinct latent rows its queries read, summed over the layers (the
    simulator counts them from the indexer's choices); None: the closed form, L · min(S, T · min(k, S))."""
    if new < 0 or context < new or out < 0:
        raise ValueError(f"bad step shape: new={new}, context={context}, out={out}")
    if cfg.family == "deepseek_v32":
        return _sparse_step_cost(cfg, new, context, out, dtype_bytes, kv_dtype_bytes, read)
    if cfg.family == "mla":
        return _mla_step_cost(cfg, new, context, out, dtype_bytes, kv_dtype_bytes)
    if cfg.family == "qwen3_next":
        return _hybrid_step_cost(cfg, new, context, out, dtype_bytes, kv_dtype_bytes)
    L, H, Hkv, D = cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    dim, hidden, vocab = cfg.dim, cfg.hidden_dim, cfg.vocab_size
    T, S = new, context
    mlp_mats = 2 if cfg.family == "gpt2" else 3
    norms = 4 if cfg.family == "gemma3" else 2  # Gemma 3 also normalises each sub-layer's output
    qk_norm = (H + Hkv) * T * D if cfg.qk_norm else 0  # per-head RMSNorm over every new q and k row
    softcap = 3 * out * vocab if cfg.final_logit_softcap is not None else 0  # divide, tanh, multiply
    flops = {
        "qkv_proj": L * 2 * T * dim * (H + 2 * Hkv) * D,
        "attn_scores": L * 2 * H * T * S * D,
        "attn_values": L * 2 * H * T * S * D,
        "out_proj": L * 2 * T * H * D * dim,
        "mlp": L * mlp_mats * 2 * T * dim * hidden,
        "lm_head": 2 * out * dim * vocab,
        # softmax ~5 ops per score (max, subtract, exp, sum, divide); norms ~5 per element
        "elementwise": L * (5 * H * T * S + norms * 5 * T * dim + 5 * qk_norm + T * hidden) + 5 * out * dim + softcap,
    }
    kv_b = dtype_bytes if kv_dtype_bytes is None else kv_dtype_bytes
    weights = L * (dim * (H + 2 * Hkv) * D + H * D * dim + mlp_mats * dim * hidden) + dim * vocab
    nbytes = {
        "weights": weights * dtype_bytes,
        "kv_read": int(L * 2 * Hkv * D * S * kv_b),
        "kv_write": int(L * 2 * Hkv * D * T * kv_b),
    }
    return StepCost(flops=flops, bytes=nbytes)


def _mla_step_cost(
    cfg: ModelConfig, new: int, context: int, out: int, dtype_bytes: int, kv_dtype_bytes: float | None
) -> StepCost:
    """Latent attention (``kvsim.models.attention.mla``), absorbed as kvsim runs it: the query is projected into the
    latent's space (W_UKᵀ q^C) and scores every cached latent [c | k_R] (r + d_R wide, one for all heads),
    the weighted latents are projected up per head (W_UV) before W_O. ``wkv_b`` is read, never applied to
    the cache. The cache moves L · (r + d_R) values per token, not 2 · L · H_kv · d."""
    L, H, d = cfg.n_layers, cfg.n_heads, cfg.head_dim
    r, dr = cfg.kv_lora_rank, cfg.qk_rope_head_dim
    dim, hidden, vocab = cfg.dim, cfg.hidden_dim, cfg.vocab_size
    T, S = new, context
    softcap = 3 * out * vocab if cfg.final_logit_softcap is not None else 0
    flops = {
        # wq (d + d_R per head), wkv_a (the latent and the RoPE key), and the query absorbed into the latent's space
        "qkv_proj": L * (2 * T * dim * H * (d + dr) + 2 * T * dim * (r + dr) + 2 * H * T * d * r),
        "attn_scores": L * 2 * H * T * S * (r + dr),
        "attn_values": L * 2 * H * T * S * r,
        # each head's weighted latent up to its value (W_UV), then W_O
        "out_proj": L * (2 * H * T * r * d + 2 * T * H * d * dim),
        "mlp": L * 3 * 2 * T * dim * hidden,
        "lm_head": 2 * out * dim * vocab,
        "elementwise": L * (5 * H * T * S + 2 * 5 * T * dim + 5 * T * r + T * hidden) + 5 * out * dim + softcap,
    }
    kv_b = dtype_bytes if kv_dtype_bytes is None else kv_dtype_bytes
    weights = L * (dim * H * (d + dr) + dim * (r + dr) + r * H * 2 * d + H * d * dim + 3 * dim * hidden) + dim * vocab
    nbytes = {
        "weights": weights * dtype_bytes,
        "kv_read": int(L * (r + dr) * S * kv_b),
        "kv_write": int(L * (r + dr) * T * kv_b),
    }
    return StepCost(flops=flops, bytes=nbytes)


def _hybrid_step_cost(
    cfg: ModelConfig, new: int, context: int, out: int, dtype_bytes: int, kv_dtype_bytes: float | None
) -> StepCost:
    """A hybrid linear-attention model (``kvsim.models.attention.hybrid``): its gated attention layers cost what any
    attention layer costs (the query projection twice as wide: each head's query and its output gate), its Gated
    DeltaNet layers cost the same for every token however long the text — no term in ``context``:

    * projections: ``in_proj_qkvz`` (q, k: Hk·dk each; v, z: Hv·dv each) and ``in_proj_ba`` (a write strength and
      a decay per value head) in ``qkv_proj``, ``out_proj`` (Hv·dv → dim) in ``out_proj``;
    * ``recurrence``: the causal depthwise convolution (conv_kernel taps on each of its (2·Hk + Hv)·dk channels),
      and per value head the state's three products — Sᵀk (what the state returns for the key), the rank-one write
      S + k·δᵀ, and Sᵀq (the output) — 2·dk·dv FLOPs each, as torch's counter counts them;
    * bytes: the state (its conv inputs at the element width, its matrices in fp32) read once and written once a
      step, beside the attention layers' K/V rows."""
    T, S = new, context
    dim, hidden, vocab = cfg.dim, cfg.hidden_dim, cfg.vocab_size
    H, Hkv, D = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    hk, hv, dk = cfg.linear_heads, cfg.linear_value_heads, cfg.linear_head_dim
    La = cfg.n_layers - len(cfg.linear_layers)  # gated attention layers
    Lr = len(cfg.linear_layers)  # Gated DeltaNet layers
    channels = (2 * hk + hv) * dk  # the convolution's q, k and v channels
    softcap = 3 * out * vocab if cfg.final_logit_softcap is not None else 0
    flops = {
        "qkv_proj": La * 2 * T * dim * (2 * H + 2 * Hkv) * D + Lr * 2 * T * dim * ((2 * hk + 2 * hv) * dk + 2 * hv),
        "attn_scores": La * 2 * H * T * S * D,
        "attn_values": La * 2 * H * T * S * D,
        "out_proj": La * 2 * T * H * D * dim + Lr * 2 * T * hv * dk * dim,
        "mlp": cfg.n_layers * 3 * 2 * T * dim * hidden,
        "lm_head": 2 * out * dim * vocab,
        RECURRENCE: Lr * (2 * T * channels * cfg.conv_kernel + 3 * 2 * T * hv * dk * dk),
        # softmax and norms as every family; a recurrent layer's decay, δ and gate ~5 ops per state value a token
        "elementwise": La * (5 * H * T * S + 2 * 5 * T * dim + 5 * (H + Hkv) * T * D + H * T * D)
        + Lr * (5 * T * hv * dk * dk + 2 * 5 * T * dim + 5 * T * hv * dk)
        + cfg.n_layers * T * hidden
        + 5 * out * dim
        + softcap,
    }
    kv_b = dtype_bytes if kv_dtype_bytes is None else kv_dtype_bytes
    conv_values, rec_values = cfg.recurrent_state_values()
    state = Lr * (conv_values * dtype_bytes + rec_values * 4)
    attn_w = dim * (2 * H + 2 * Hkv) * D + H * D * dim
    rec_w = dim * ((2 * hk + 2 * hv) * dk + 2 * hv) + channels * cfg.conv_kernel + hv * dk * dim
    weights = La * attn_w + Lr * rec_w + cfg.n_layers * 3 * dim * hidden + dim * vocab
    nbytes = {
        "weights": weights * dtype_bytes,
        "kv_read": int(La * 2 * Hkv * D * S * kv_b),
        "kv_write": int(La * 2 * Hkv * D * T * kv_b),
        "state_read": state,
        "state_write": state,
    }
    return StepCost(flops=flops, bytes=nbytes)


def sparse_rows_read(cfg: ModelConfig, new: int, context: int) -> int:
    """The latent rows one layer's attention reads at most on a sparse-attention model (deepseek_v32): each of the
    ``new`` queries reads min(k, S) rows, and no more than the S held: a decode step reads exactly min(k, S)."""
    return min(context, new * min(cfg.index_topk, context))


def _sparse_step_cost(
    cfg: ModelConfig, new: int, context: int, out: int, dtype_bytes: int, kv_dtype_bytes: float | None, read: int | None
) -> StepCost:
    """DeepSeek-V3.2's sparse MLA (``kvsim.models.attention.dsa``), as kvsim runs it: the query through
    q_lora_rank, the lightning indexer's keys, queries and head weights, its scores over *every* held row
    (H_I · d_I a row), then absorbed MLA over the k = min(index_topk, S) rows each query gathered. Bytes: every
    indexer key is read (``index_read``: L · d_I · S), only the chosen latents (``kv_read``: the distinct rows
    read, ``read`` when the run counted them); each new token writes a latent and an indexer key."""
    L, H, d = cfg.n_layers, cfg.n_heads, cfg.head_dim
    r, dr, qr = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.q_lora_rank
    hi, di = cfg.index_heads, cfg.index_head_dim
    dim, hidden, vocab = cfg.dim, cfg.hidden_dim, cfg.vocab_size
    T, S = new, context
    k = min(cfg.index_topk, S)
    softcap = 3 * out * vocab if cfg.final_logit_softcap is not None else 0
    query = 2 * T * dim * qr + 2 * T * qr * H * (d + dr)
    indexer = 2 * T * dim * di + 2 * T * qr * hi * di + 2 * T * dim * hi  # its key, its queries, its head weights
    flops = {
        "qkv_proj": L * (query + 2 * T * dim * (r + dr) + 2 * H * T * d * r + indexer),
        # the indexer's dot products with every held key and their weighted sum, then MLA over the k chosen rows
        "attn_scores": L * (2 * hi * T * S * di + 2 * T * hi * S + 2 * H * T * k * (r + dr)),
        "attn_values": L * 2 * H * T * k * r,
        "out_proj": L * (2 * H * T * r * d + 2 * T * H * d * dim),
        "mlp": L * 3 * 2 * T * dim * hidden,
        "lm_head": 2 * out * dim * vocab,
        # softmax over k; ReLU and top-k over the S index scores; norms
        "elementwise": L * (5 * H * T * k + 3 * hi * T * S + 3 * 5 * T * dim + 5 * T * (r + qr + di) + T * hidden)
        + 5 * out * dim
        + softcap,
    }
    kv_b = dtype_bytes if kv_dtype_bytes is None else kv_dtype_bytes
    attn_weights = dim * qr + qr * H * (d + dr) + dim * (r + dr) + r * H * 2 * d + H * d * dim
    index_weights = qr * hi * di + dim * di + dim * hi
    weights = L * (attn_weights + index_weights + 3 * dim * hidden) + dim * vocab
    rows = read if read is not None else L * sparse_rows_read(cfg, T, S)
    nbytes = {
        "weights": weights * dtype_bytes,
        "kv_read": int(rows * (r + dr) * kv_b),
        "index_read": int(L * di * S * kv_b),
        "kv_write": int(L * (r + dr + di) * T * kv_b),
    }
    return StepCost(flops=flops, bytes=nbytes)


def cumulative_kv_rows(prompt_len: int, decode_steps: int, cached: bool) -> int:
    """K/V rows computed after prefill + ``decode_steps`` decodes (the seed's Σt vs n)."""
    if cached:
        return prompt_len + decode_steps
    # steps compute P, P+1, ..., P+k rows: arithmetic series
    k = decode_steps
    return (k + 1) * prompt_len + k * (k + 1) // 2
