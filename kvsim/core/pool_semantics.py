"""The free-block queue orders a paged pool has, named once (torch-free: the CLI's flags and the app's
views read it before the engine loads). ``kvsim.caches.blocks`` says what each one does.

* "vllm": vLLM v1's block pool step for step (the null block 0; freed blocks with no hash handed out first);
* "kvsim": kvsim's first pool (every freed block to the back of the queue; no null block).
"""

POOL_SEMANTICS = ("vllm", "kvsim")
DEFAULT_POOL_SEMANTICS = "vllm"
