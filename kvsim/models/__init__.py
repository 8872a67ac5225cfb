"""The models kvsim runs and how they are loaded: the transformer itself (``transformer``), its
config (``config``), tokenizers and chat templates, and the loaders — ``loading.load_model`` resolves
a ``--model`` value to a bundled name, a fetched one (``catalog``), ``random:``, a Hugging Face
checkpoint directory (``checkpoints``) or a GGUF file (the ``gguf`` subpackage). ``base`` is their shared leaf.
``kernels`` holds how a step's products run (the one-row decode kernel, huge pages, ``torch.compile``,
INT8/INT4 weight codes)."""
