"""Small shared builders for engine tests: seeded random models of each family."""

from __future__ import annotations

from kvsim.models.loading import LoadedModel, load_model

FAMILY_SPECS = {
    "gpt2": "random:family=gpt2,layers=2,heads=4,dim=64,vocab=300,ctx=512,seed=1",
    "llama-gqa": "random:family=llama,layers=2,heads=8,kv_heads=2,dim=64,vocab=300,ctx=512,seed=2",
    "llama-mqa": "random:family=llama,layers=2,heads=4,kv_heads=1,dim=64,vocab=300,ctx=512,seed=3",
    "llama-mha-tied-bias": "random:family=llama,layers=2,heads=4,kv_heads=4,dim=64,vocab=300,ctx=512,"
    "tie=true,qkv_bias=true,seed=4",
}


def load(spec: str) -> LoadedModel:
    return load_model(spec)
