#!/usr/bin/env bash
# Regenerate the README's and docs' pictures: docs/screenshots/*.png, rendered offscreen by `kvsim screenshot`.
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
SHORT="It is a truth universally acknowledged, that"
LONG="It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. However little known the feelings or views of such a man may be"
shot() {  # name steps lanes prompt
  python -m kvsim screenshot --model "$MODEL" --prompt "$4" --steps "$2" --lanes "$3" --out "$TMP/$1" --size 1920x1080
}
shot decode 16 uncached,cached "$SHORT"
shot prefill 1 uncached,cached "$SHORT"
shot windows 24 kv,window:16,sink:4+window:12 "$LONG"
shot quantized 24 kv,int8,int4:g8:r8 "$LONG"
mkdir -p "$OUT"
cp "$TMP/decode/kvsim-1920x1080.png" "$OUT/main-1920x1080.png"
cp "$TMP/decode/kvsim-1280x720.png" "$OUT/main-1280x720.png"
cp "$TMP/prefill/kvsim-1920x1080.png" "$OUT/prefill-1920x1080.png"
cp "$TMP/windows/kvsim-1920x1080.png" "$OUT/window-sinks-1920x1080.png"
cp "$TMP/quantized/kvsim-1920x1080.png" "$OUT/quantized-1920x1080.png"
ls -l "$OUT"
