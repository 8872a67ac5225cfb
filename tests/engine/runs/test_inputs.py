"""Read what transformers reads, refuse what it refuses: a request list with a byte-order mark is the
JSON it holds; a Gemma 3 ``null`` where the architecture needs a value is refused naming the key —
checked against transformers itself (it fails to build or run the same config) — while an absent
key takes transformers' default; a GPT-2 checkpoint that transformers saves and runs (vocabulary 300,
its default ``eos_token_id`` 50256) loads, with a warning that generation will not stop at it."""

from __future__ import annotations

import json

import pytest
import torch

from kvsim.models.base import ModelLoadError
from kvsim.models.hf_config import config_from_hf
from kvsim.serving.request_lists import load_requests, parse_requests

transformers = pytest.importorskip("transformers")


def test_a_json_request_file_with_a_byte_order_mark_is_json(tmp_path):
    path = tmp_path / "requests.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(["first prompt", "second prompt"]).encode())
    assert load_requests(path).prompts == ("first prompt", "second prompt")
    lines = tmp_path / "requests.txt"
    lines.write_bytes("\ufeffone\ntwo\n".encode())
    assert load_requests(lines).prompts == ("one", "two")  # the mark is not part of the first prompt
    assert parse_requests("\ufeff" + json.dumps({"prompts": ["a", "b"]})).prompts == ("a", "b")


GEMMA3 = {
    "model_type": "gemma3_text",
    "vocab_size": 96,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "max_position_embeddings": 128,
    "layer_types": ["sliding_attention", "full_attention"],
}
NEEDED = [
    "sliding_window",
    "query_pre_attn_scalar",
    "rope_theta",
    "rope_local_base_freq",
    "head_dim",
    "rms_norm_eps",
    "max_position_embeddings",
    "hidden_activation",
]


def _transformers_runs(config: dict, tmp_path) -> bool:
    """Does transformers build this config.json and run a forward on it?"""
    (tmp_path / "config.json").write_text(json.dumps(config))
    try:
        cfg = transformers.AutoConfig.from_pretrained(tmp_path)
        model = transformers.Gemma3ForCausalLM(cfg).eval()
        with torch.no_grad():
            logits = model(torch.tensor([[1, 2, 3]])).logits
        return bool(torch.isfinite(logits).all())
    except Exception:  # noqa: BLE001 - any failure is "transformers refuses it"
        return False


@pytest.mark.parametrize("key", NEEDED)
def test_gemma3_null_where_a_value_is_needed_is_refused_as_transformers_does(key, tmp_path):
    config = {**GEMMA3, key: None}
    assert not _transformers_runs(config, tmp_path), f"transformers runs {key}: null; kvsim should too"
    with pytest.raises(ModelLoadError, match=key):
        config_from_hf(config, "m")


def test_gemma3_absent_keys_take_transformers_defaults(tmp_path):
    assert _transformers_runs(GEMMA3, tmp_path)
    cfg = config_from_hf(GEMMA3, "m")
    ref = transformers.AutoConfig.from_pretrained(tmp_path)
    assert cfg.query_pre_attn_scalar == ref.query_pre_attn_scalar
    assert cfg.layer_windows == (ref.sliding_window, None)
    assert cfg.norm_eps == ref.rms_norm_eps
    params = ref.rope_parameters
    assert (cfg.rope_theta, cfg.rope_theta_local) == (
        params["full_attention"]["rope_theta"],
        params["sliding_attention"]["rope_theta"],
    )


@pytest.mark.parametrize("layers,key", [("full_attention", "rope_local_base_freq"), ("sliding_attention", "rope_theta")])
def test_gemma3_null_base_of_a_kind_of_layer_the_model_lacks_is_read_as_transformers_runs_it(layers, key, tmp_path):
    config = {**GEMMA3, "layer_types": [layers, layers], key: None}
    assert _transformers_runs(config, tmp_path)
    cfg = config_from_hf(config, "m")
    assert cfg.layer_windows == ((None, None) if layers == "full_attention" else (4096, 4096))


def test_gpt2_with_an_eos_outside_its_vocabulary_loads_with_a_warning(tmp_path, capsys):
    from test_parity_hf import write_tokenizer

    from kvsim.cli.entry import main
    from kvsim.models.loading import load_model

    cfg = transformers.GPT2Config(vocab_size=300, n_layer=1, n_embd=32, n_head=2, n_positions=64)
    assert cfg.eos_token_id == 50256  # transformers' default, outside a 300-token vocabulary
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp_path, safe_serialization=True)
    write_tokenizer(tmp_path, 300)
    loaded = load_model(str(tmp_path))
    assert loaded.tokenizer.eos_id is None
    assert any("eos_token_id 50256" in w and "will not stop" in w for w in loaded.info["warnings"])
    capsys.readouterr()
    assert main(["run", "--model", str(tmp_path), "--prompt-ids", "1,2", "--steps", "2"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()  # eos and bos (both 50256): one line each
    assert len(lines) == 2 and all(line.startswith("warning: ") for line in lines)
    assert any("eos_token_id 50256" in line and "will not stop" in line for line in lines)
