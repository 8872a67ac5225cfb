"""The models kvsim runs and how they are loaded: the transformer itself (``transformer``), its
config (``config``), tokenizers and chat templates, and the loaders — ``loading.load_model`` resolves
a ``--model`` value to a bundled name, a fetched one (``catalog``), ``random:``, a Hugging Face
checkpoint directory (``checkpoints``) or a GGUF file (the ``gguf`` subpackage). ``base`` is their shared leaf."""
