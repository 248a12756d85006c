#!/bin/sh
# `make demo`: synthesize (once, cached in build/demo/) a small Qwen3-MoE-style model with a chat
# template, then run it: show what the model is, generate from a prompt, and measure it.
set -e
BUILD=${1:-build}
BIN=$BUILD/bin
M=$BUILD/demo/qwen3moe-demo.gguf
mkdir -p "$BUILD/demo"
if [ ! -f "$M" ]; then
    echo "== synthesizing a demo MoE model (8 layers, 32 experts top-4, Q4_K; cached in $M)"
    "$BIN/edge0-infer" synth --arch qwen3moe --n-layer 8 --n-embd 512 --n-head 8 --n-head-kv 2 --head-dim 64 \
        --n-expert 32 --n-expert-used 4 --n-ff-exp 256 --n-vocab 8192 --type q4_k --seed 1 \
        --chat-template-file tools/demo-template.jinja --out "$M"
fi
echo
echo "== edge0-infer info --model $M"
"$BIN/edge0-infer" info --model "$M"
echo
echo "== edge0-infer run (the model's chat template, greedy; random weights, so the text is noise)"
"$BIN/edge0-infer" run -m "$M" -p "Tell me about the library." --temp 0 -n 32
echo
echo "== edge0-infer bench (one process; use edge0-bench sweep for numbers worth keeping)"
"$BIN/edge0-infer" bench --model "$M" --prompt medium --warmup 4 --ntok 64 --breakdown > "$BUILD/demo/bench.json"
echo "(the JSON row is in $BUILD/demo/bench.json)"
