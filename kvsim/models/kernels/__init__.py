"""How a step's matrix products run and where their weights lie: the one-row decode kernel (``row_matmul``:
numba's, numpy's or ``F.linear``), the weights' huge pages (``huge_pages``), ``torch.compile`` of the cache-free
parts (``compiled``) and the INT8/INT4 weight codes with their products (``quantized_weights``). The model
(``kvsim.models.transformer``) chooses among them; none changes a value beyond float32 rounding."""
