"""GGUF loading (``kvsim.models.gguf``) against Hugging Face checkpoints and ``transformers``' own GGUF reader.

* A tiny random Llama (GQA, untied) is saved twice: as a Hugging Face directory and as a GGUF file
  written with ``gguf.GGUFWriter`` in llama.cpp's layout (Q/K rows permuted by llama.cpp's own
  formula, written out here independently of kvsim). kvsim's GGUF load equals its HF-dir load and
  transformers' logits within 1e-4 (prefill, every position); a Q8_0-quantized copy equals
  transformers' GGUF load of the same file.
* The tokenizer comes from the GGUF metadata: byte-level BPE, special tokens, BOS/EOS, chat
  template (used by ``kvsim run``, switched off by ``--no-chat-template``).
* Corrupt, truncated or non-Llama files raise ``ModelLoadError`` (exit 2 from the CLI).
* Every tensor is used or the file is refused, naming the tensor; metadata is checked against the
  tensors before anything is built.
* SmolLM2-135M-Instruct, opt-in (``KVSIM_SMOLLM2=1`` after ``kvsim models get smollm2-135m``, or
  ``KVSIM_SMOLLM2=path/to/file.gguf``): kvsim's greedy continuation of a chat prompt equals
  transformers' GGUF loading for 32 tokens.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import opt_in_model_file

gguf = pytest.importorskip("gguf")

from kvsim.caches import KVCache, NoCache  # noqa: E402
from kvsim.cli.entry import main as cli_main  # noqa: E402
from kvsim.models.loading import ModelLoadError, load_model  # noqa: E402

DIM, LAYERS, HEADS, KV_HEADS, FFN = 64, 2, 4, 2, 160
ATOL = 1e-4
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_alphabet() -> list[str]:
    """GPT-2's printable spelling of the 256 bytes (what byte-level BPE vocabularies are written in)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def tiny_vocab() -> tuple[list[str], list[int], list[str]]:
    """tokens, token types, merges: 3 control tokens, the 256 bytes, and a few merged words."""
    merges = ["Ġ t", "h e", "Ġt he", "Ġ a", "i n", "Ġ c", "Ġc a", "Ġca t"]
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *byte_alphabet(), *(m.replace(" ", "") for m in merges)]
    types = [3, 3, 3] + [1] * (len(tokens) - 3)
    return tokens, types, merges


def spm_vocab() -> tuple[list[str], list[int], list[float]]:
    """A SentencePiece-style vocabulary (tokenizer.ggml.model = llama): tokens, types, scores, no merges."""
    pieces = [
        "▁",
        "t",
        "h",
        "e",
        "c",
        "a",
        "s",
        "i",
        "n",
        "▁t",
        "he",
        "▁the",
        "▁c",
        "at",
        "▁cat",
        "▁i",
        "▁is",
        "▁a",
        "in",
        "▁in",
        "▁h",
        "▁hat",
    ]
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *pieces]
    types = [2, 3, 3] + [6] * 256 + [1] * len(pieces)
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    return tokens, types, scores


def llamacpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf.py ``LlamaModel.permute`` (HF rotate-half rows → interleaved)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_llama(seed: int = 1, vocab_size: int | None = None):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=vocab_size or len(tiny_vocab()[0]),
        hidden_size=DIM,
        intermediate_size=FFN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(1 + 0.1 * noise if "norm" in name else noise if "embed" in name else noise / math.sqrt(p.shape[1]))
    return model


def write_gguf(
    path: Path,
    hf_model,
    qtype=None,
    arch: str = "llama",
    chat_template: str | None = CHAT_TEMPLATE,
    tie: bool = False,
    spm: bool = False,
    extra: dict[str, np.ndarray] | None = None,
    drop: tuple[str, ...] = (),
) -> Path:
    """``hf_model``'s weights in llama.cpp's GGUF layout (F32, or ``qtype`` for the 2-D weights), with
    the byte-level BPE vocabulary of ``tiny_vocab`` or (``spm``) the SentencePiece one of ``spm_vocab``."""
    tokens, types, merges = tiny_vocab()
    cfg = hf_model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if qtype is None else gguf.LlamaFileType.MOSTLY_Q8_0)
    if spm:
        tokens, types, scores = spm_vocab()
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_scores(scores)
        w.add_unk_token_id(0)
        w.add_add_space_prefix(True)
        w.add_add_bos_token(True)
    else:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_add_bos_token(False)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    if chat_template:
        w.add_chat_template(chat_template)
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in hf_model.state_dict().items()}
    names = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    out = {"token_embd.weight": sd["model.embed_tokens.weight"], "output_norm.weight": sd["model.norm.weight"]}
    if not tie:
        out["output.weight"] = sd["lm_head.weight"]
    for i in range(cfg.num_hidden_layers):
        for src, dst in names.items():
            t = sd[f"model.layers.{i}.{src}.weight"]
            if dst == "attn_q":
                t = llamacpp_permute(t, cfg.num_attention_heads)
            elif dst == "attn_k":
                t = llamacpp_permute(t, cfg.num_key_value_heads)
            out[f"blk.{i}.{dst}.weight"] = t
    out.update(extra or {})
    for name in drop:
        out.pop(name)
    for name, t in out.items():
        if qtype is not None and t.ndim == 2:
            w.add_tensor(name, gguf.quants.quantize(t, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    """(transformers model, its HF directory, the same weights as an F32 GGUF file)."""
    from test_parity_hf import write_tokenizer

    root = tmp_path_factory.mktemp("tiny-gguf")
    hf = hf_llama()
    hf_dir = root / "hf"
    hf.save_pretrained(hf_dir, safe_serialization=True)
    write_tokenizer(hf_dir, hf.config.vocab_size)
    return hf, hf_dir, write_gguf(root / "tiny.gguf", hf)


def _ids(n: int = 12) -> torch.Tensor:
    return torch.randint(3, 260, (1, n), generator=torch.Generator().manual_seed(3))


def _prefill(model, ids: torch.Tensor) -> torch.Tensor:
    return model(ids, torch.arange(ids.shape[1]), NoCache(model.cfg.n_layers), last_only=False).logits


def test_gguf_config_from_metadata(tiny_gguf):
    _, _, path = tiny_gguf
    cfg = load_model(str(path)).model.cfg
    assert (cfg.family, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.dim, cfg.hidden_dim) == (
        "llama",
        LAYERS,
        HEADS,
        KV_HEADS,
        DIM,
        FFN,
    )
    assert cfg.vocab_size == len(tiny_vocab()[0]) and cfg.max_seq_len == 256
    assert cfg.rope_theta == 10000.0 and cfg.norm_eps == pytest.approx(1e-5) and not cfg.tie_embeddings


def test_gguf_matches_hf_dir_and_transformers(tiny_gguf):
    hf, hf_dir, path = tiny_gguf
    ours_gguf, ours_hf = load_model(str(path)).model, load_model(str(hf_dir)).model
    for (name, a), (_, b) in zip(ours_gguf.state_dict().items(), ours_hf.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0, msg=name)  # un-permuted exactly
    ids = _ids()
    with torch.no_grad():
        ref = hf(ids).logits
    torch.testing.assert_close(_prefill(ours_gguf, ids), ref, atol=ATOL, rtol=0)
    # cached decode of the GGUF model agrees with the prefill of the whole sequence
    cache, n = KVCache(LAYERS), 6
    ours_gguf(ids[:, :n], torch.arange(n), cache)
    for t in range(n, ids.shape[1]):
        step = ours_gguf(ids[:, t : t + 1], torch.tensor([t]), cache).logits
        torch.testing.assert_close(step[0, -1], ref[0, t], atol=ATOL, rtol=0)


def test_tied_embeddings_when_output_weight_absent(tiny_gguf, tmp_path):
    hf, _, _ = tiny_gguf
    with torch.no_grad():
        hf.lm_head.weight.copy_(hf.model.embed_tokens.weight)
    path = write_gguf(tmp_path / "tied.gguf", hf, tie=True)
    model = load_model(str(path)).model
    assert model.cfg.tie_embeddings and model.lm_head.weight is model.tok_embeddings.weight
    ids = _ids()
    with torch.no_grad():
        ref = hf(ids).logits
    torch.testing.assert_close(_prefill(model, ids), ref, atol=ATOL, rtol=0)


def test_quantized_gguf_matches_transformers_gguf_loader(tiny_gguf, tmp_path):
    pytest.importorskip("accelerate")
    transformers = pytest.importorskip("transformers")
    hf, _, _ = tiny_gguf
    path = write_gguf(tmp_path / "tiny-q8.gguf", hf, qtype=gguf.GGMLQuantizationType.Q8_0)
    ref_model = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    ours = load_model(str(path)).model
    ids = _ids()
    with torch.no_grad():
        ref = ref_model(ids).logits
    torch.testing.assert_close(_prefill(ours, ids), ref, atol=ATOL, rtol=0)
    with torch.no_grad():
        exact = hf(ids).logits
    assert float((ref - exact).abs().max()) > 1e-6  # the Q8_0 rounding is really there


def test_tokenizer_and_chat_template_from_metadata(tiny_gguf):
    _, _, path = tiny_gguf
    tok = load_model(str(path)).tokenizer
    tokens = tiny_vocab()[0]
    assert (tok.bos_id, tok.eos_id, tok.chat_template) == (1, 2, CHAT_TEMPLATE)
    ids = tok.encode("the cat")
    assert [tokens[i] for i in ids] == ["t", "he", "Ġcat"]  # byte-level BPE with the file's merges
    assert tok.decode(ids) == "the cat"
    prompt = tok.format_prompt("the cat")
    assert prompt == "<|im_start|>user\nthe cat<|im_end|>\n<|im_start|>assistant\n"
    ids = tok.encode(prompt)
    assert ids[0] == 1 and tokens[ids[0]] == "<|im_start|>" and 2 in ids  # specials stay whole
    assert tok.format_prompt("the cat", chat=False) == "the cat"


def test_sentencepiece_gguf_tokenizes_as_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    hf = hf_llama(vocab_size=len(spm_vocab()[0]))
    path = write_gguf(tmp_path / "spm.gguf", hf, spm=True, chat_template=None)
    ours = load_model(str(path)).tokenizer
    ref = transformers.AutoTokenizer.from_pretrained(tmp_path, gguf_file=path.name)
    for text in ("the cat is in the hat", "  the  cat", "héllo wörld", "the cat</s>", "hat\nthe"):
        ids = ours.encode(text)
        assert ids == ref(text).input_ids, text
        assert ids[0] == 1  # add_bos_token
        assert ours.decode(ids[1:]) == ref.decode(ids[1:]), text
    assert ours.chat_template is None and ours.format_prompt("x") == "x"


def test_cli_run_uses_chat_template_unless_switched_off(tiny_gguf, capsys):
    _, _, path = tiny_gguf
    lines = []
    for extra in ([], ["--no-chat-template"]):
        assert cli_main(["run", "--model", str(path), "--prompt", "the cat", "--steps", "3", "--json", *extra]) == 0
        lines.append([json.loads(x) for x in capsys.readouterr().out.splitlines()])
    with_template, without = lines
    assert with_template[-1]["summary"]["tokens_identical"]
    assert with_template[0]["cached"]["kv_positions"] == len(
        load_model(str(path)).tokenizer.encode("<|im_start|>user\nthe cat<|im_end|>\n<|im_start|>assistant\n")
    )
    assert without[0]["cached"]["kv_positions"] == 3


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "header-only"])
def test_corrupt_gguf_is_a_model_load_error(tiny_gguf, tmp_path, damage, capsys):
    _, _, good = tiny_gguf
    data = good.read_bytes()
    bad = tmp_path / f"{damage}.gguf"
    bad.write_bytes(
        {
            "garbage": b"this is not a gguf file at all" * 10,
            "empty": b"",
            "truncated": data[: len(data) * 2 // 3],
            "header-only": data[:64],
        }[damage]
    )
    with pytest.raises(ModelLoadError, match="GGUF|gguf"):
        load_model(str(bad))
    assert cli_main(["run", "--model", str(bad), "--prompt", "x", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_non_llama_gguf_names_what_is_supported(tiny_gguf, tmp_path):
    hf, _, _ = tiny_gguf
    path = write_gguf(tmp_path / "gpt2.gguf", hf, arch="gpt2")
    with pytest.raises(ModelLoadError, match="architecture 'gpt2' is not supported.*Llama"):
        load_model(str(path))


@pytest.mark.parametrize(
    "extra, drop, message",
    [
        # a bias on one layer's output projection: the others lack theirs
        ({"blk.0.attn_output.bias": np.zeros(DIM, np.float32)}, (), "lack.*'blk.1.attn_output.bias'"),
        ({"blk.7.attn_q.weight": np.zeros((DIM, DIM), np.float32)}, (), "ignore.*'blk.7.attn_q.weight'"),
        ({"mystery.weight": np.zeros(4, np.float32)}, (), "ignore.*'mystery.weight'"),
        ({}, ("blk.1.ffn_up.weight",), "lack.*'blk.1.ffn_up.weight'"),
        ({"blk.0.ffn_norm.weight": np.ones(DIM + 2, np.float32)}, (), "'blk.0.ffn_norm.weight' has shape"),
    ],
)
def test_gguf_tensors_all_used_or_refused(tiny_gguf, tmp_path, extra, drop, message):
    hf, _, _ = tiny_gguf
    path = write_gguf(tmp_path / "bad.gguf", hf, extra=extra, drop=drop)
    with pytest.raises(ModelLoadError, match=message):
        load_model(str(path))


# ------------------------------------------------------------------------------ SmolLM2-135M
SMOL_STEPS = 32


def _smollm2_file() -> Path:
    """Opt-in, so the suite's pass/skip count does not depend on what this machine has fetched."""
    return opt_in_model_file("KVSIM_SMOLLM2", "smollm2-135m", "compare SmolLM2 with transformers")


@pytest.fixture
def one_thread():
    """One torch thread: on a small shared machine two threads per process oversubscribe the cores
    (measured here: 80 ms/token with one thread vs 500+ ms with two under load)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_smollm2_greedy_matches_transformers_gguf_loading(one_thread):
    pytest.importorskip("accelerate")
    transformers = pytest.importorskip("transformers")
    gguf_path = _smollm2_file()
    loaded = load_model(str(gguf_path))
    assert loaded.info["format"] == "gguf" and loaded.model.cfg.n_kv_heads == 3
    assert loaded.model.cfg.rope_theta == 100000.0 and loaded.model.cfg.tie_embeddings
    tok = loaded.tokenizer
    ids = tok.encode(tok.format_prompt("What is the capital of France? Answer in one sentence, then explain why."))
    assert ids[0] == 1  # <|im_start|>: the file's chat template was applied
    ref_model = transformers.AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    from test_parity_hf import hf_step

    n = len(ids)
    model, cache = loaded.model, KVCache(loaded.model.cfg.n_layers)
    ref, past = hf_step(ref_model, torch.tensor([ids]), None)
    got = model(torch.tensor([ids]), torch.arange(n), cache, last_only=True).logits
    ref_tokens, ours, worst = [], [], 0.0
    for step in range(SMOL_STEPS):  # greedy through EOS on both sides: 32 tokens each
        worst = max(worst, float((got[0, -1] - ref[0, -1]).abs().max()))
        ref_tokens.append(int(ref[0, -1].argmax()))
        ours.append(int(got[0, -1].argmax()))
        ref, past = hf_step(ref_model, torch.tensor([[ref_tokens[-1]]]), past)
        got = model(torch.tensor([[ours[-1]]]), torch.tensor([n + step]), cache, last_only=True).logits
    assert ours == ref_tokens, (tok.decode(ours), tok.decode(ref_tokens))
    assert worst < ATOL, f"max |Δlogit| {worst:.2e}"
    assert "Paris" in tok.decode(ours)
