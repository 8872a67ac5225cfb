"""GGUF files (llama.cpp's format): ``file.load_gguf`` reads one into kvsim's transformer and a tokenizer, with
``reader`` (the ``gguf`` library's reader, guarded and faster on metadata) and ``tokenizer`` (the tokenizer from
its ``tokenizer.ggml.*`` metadata); ``blocks`` keeps its quantized blocks as they are (the ``@gguf`` weights)."""
