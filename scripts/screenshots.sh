#!/usr/bin/env bash
# Regenerate the README's pictures: docs/screenshots/*.png, rendered offscreen by `kvsim screenshot`.
# Uses the bundled model "tiny" when it exists, else a random Llama with GQA (same shape).
set -euo pipefail
cd "$(dirname "$0")/.."
export QT_QPA_PLATFORM=offscreen
MODEL="${KVSIM_SCREENSHOT_MODEL:-tiny}"
if [ ! -d resources/models/tiny ] && [ "$MODEL" = tiny ]; then
  MODEL="random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,seed=0"
fi
OUT=docs/screenshots
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python -m kvsim screenshot --model "$MODEL" --prompt "It is a truth universally acknowledged, that" \
  --steps 16 --out "$TMP/decode" --size 1920x1080
python -m kvsim screenshot --model "$MODEL" --prompt "It is a truth universally acknowledged, that" \
  --steps 1 --out "$TMP/prefill" --size 1920x1080
mkdir -p "$OUT"
cp "$TMP/decode/kvsim-1920x1080.png" "$OUT/main-1920x1080.png"
cp "$TMP/decode/kvsim-1280x720.png" "$OUT/main-1280x720.png"
cp "$TMP/prefill/kvsim-1920x1080.png" "$OUT/prefill-1920x1080.png"
ls -l "$OUT"
