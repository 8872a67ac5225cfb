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
# a screen big enough for a 1920×1080 window (offscreen's default is 800×800, and the window never opens larger)
echo '{"screens": [{"name": "shots", "x": 0, "y": 0, "width": 2560, "height": 1440, "dpr": 1}]}' > "$TMP/screen.json"
export QT_QPA_PLATFORM="offscreen:configfile=$TMP/screen.json"
SHORT="It is a truth universally acknowledged, that"
LONG="It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. However little known the feelings or views of such a man may be"
shot() {  # name steps lanes prompt [more kvsim screenshot flags]
  python -m kvsim screenshot --model "$MODEL" --prompt "$4" --steps "$2" --lanes "$3" --out "$TMP/$1" --size 1920x1080 "${@:5}"
}
shot decode 16 uncached,cached "$SHORT" --variants
shot prefill 1 uncached,cached "$SHORT"
shot windows 24 kv,window:16,sink:4+window:12 "$LONG"
shot quantized 24 kv,int8,int4:g8:r8 "$LONG"
shot paged 20 kv,paged:4 "$SHORT"
shot light 16 uncached,cached "$SHORT" --theme light
shot projector 16 uncached,cached "$SHORT" --size 1280x720 --scale 1.5 --lanes-only
mkdir -p "$OUT"
cp "$TMP/decode/kvsim-1920x1080.png" "$OUT/main-1920x1080.png"
cp "$TMP/decode/kvsim-1280x720.png" "$OUT/main-1280x720.png"
cp "$TMP/prefill/kvsim.png" "$OUT/prefill-1920x1080.png"
cp "$TMP/windows/kvsim.png" "$OUT/window-sinks-1920x1080.png"
cp "$TMP/quantized/kvsim.png" "$OUT/quantized-1920x1080.png"
cp "$TMP/paged/kvsim.png" "$OUT/paged-1920x1080.png"
cp "$TMP/light/kvsim.png" "$OUT/main-light-1920x1080.png"
cp "$TMP/projector/kvsim.png" "$OUT/lanes-only-1280x720-scale1.5.png"
# the layouts and presenter mode (one process per screen size), the light theme's contrast, the docks,
# the lesson and the Portuguese window
python scripts/layout_shots.py --out "$OUT"
python scripts/contrast_shots.py --out "$OUT"
python scripts/dock_shots.py --out "$OUT" --model "$MODEL"
# the stage: every view at 853×480 (a 1280×720 projector at ×1.5) and in presenter mode, every lesson step
python scripts/stage_shots.py "$OUT" --only projector,desktop,presenter,lesson
ls -l "$OUT"
