#!/bin/sh
# llamaserver.sh — build llama.cpp's own OpenAI-compatible server (llama-server) from the source
# that the pinned npm package ships (make llamacpp extracts it into BUILD/llamacpp/src), for the
# harness's server-mode comparison (edge0-bench compare --engines openai=URL, issue 16).
#
# Usage: sh tools/llamaserver.sh [BUILD]      (make llamaserver)
#
# node-llama-cpp ships prebuilt libllama/libggml but no llama-server, so this compiles the
# bundled source once with CMake (about 10-20 minutes on 2 cores) into BUILD/llamacpp/server;
# the binary is BUILD/llamacpp/server/bin/llama-server. Not part of `make test` (too slow for
# CI); tools/compare_report.sh and tests/test_compare.sh use it when it is there.
#
# CPU level: LLAMASERVER_SIMD=avx2 (default) builds ggml's CPU backend for AVX2+FMA+F16C only
# (the project's target machine: x86-64 without AVX-512), as `--simd avx2` / E0_SIMD=avx2 cap
# the other engines; LLAMASERVER_SIMD=native builds for this machine's full instruction set.
# Exit status: 0 ready; 3 when the llama.cpp source is missing (make llamacpp first) or cmake
# is not installed; 1 on any other failure.
set -eu

BUILD=${1:-build}
SIMD=${LLAMASERVER_SIMD:-avx2}
SRC_DIR=$BUILD/llamacpp/src
OUT_DIR=$BUILD/llamacpp/server
BIN=$OUT_DIR/bin/llama-server
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

die() { echo "llamaserver.sh: $*" >&2; exit 1; }
unavailable() { echo "llamaserver.sh: $*" >&2; exit 3; }

[ -f "$SRC_DIR/tools/server/CMakeLists.txt" ] || unavailable "$SRC_DIR has no tools/server: run 'make llamacpp' first"
command -v cmake >/dev/null 2>&1 || unavailable "'cmake' not found; install it (Debian: apt-get install cmake g++)"
command -v c++ >/dev/null 2>&1 || unavailable "'c++' not found; install it (Debian: apt-get install g++)"

case $SIMD in
avx2) CPU_FLAGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
        -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" ;;
native) CPU_FLAGS="-DGGML_NATIVE=ON" ;;
*) die "LLAMASERVER_SIMD must be avx2 or native, not '$SIMD'" ;;
esac

COMMIT=$(git -C "$SRC_DIR" rev-parse HEAD 2>/dev/null || echo unknown)
STAMP=$OUT_DIR/.built-$COMMIT-$SIMD
if [ -x "$BIN" ] && [ -f "$STAMP" ]; then
    echo "llamaserver.sh: ready: $BIN (llama.cpp $COMMIT, $SIMD)" >&2
    exit 0
fi

echo "llamaserver.sh: building llama-server (llama.cpp $COMMIT, CPU level $SIMD) into $OUT_DIR; this takes a while" >&2
rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR"
# Static libraries: the binary does not pick up the prebuilt libllama/libggml of BUILD/llamacpp/lib.
# shellcheck disable=SC2086 # CPU_FLAGS is a list of words
cmake -S "$SRC_DIR" -B "$OUT_DIR/cmake" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_OPENMP=OFF $CPU_FLAGS \
    >"$OUT_DIR/cmake.log" 2>&1 || { tail -n 20 "$OUT_DIR/cmake.log" >&2; die "cmake configure failed (log: $OUT_DIR/cmake.log)"; }
cmake --build "$OUT_DIR/cmake" --target llama-server -j "$JOBS" >"$OUT_DIR/build.log" 2>&1 ||
    { tail -n 20 "$OUT_DIR/build.log" >&2; die "build failed (log: $OUT_DIR/build.log)"; }
mkdir -p "$OUT_DIR/bin"
cp "$OUT_DIR/cmake/bin/llama-server" "$BIN" || die "no llama-server in $OUT_DIR/cmake/bin"
"$BIN" --version >/dev/null 2>&1 || die "$BIN does not start: run it to see why"
rm -rf "$OUT_DIR/cmake"
touch "$STAMP"
echo "llamaserver.sh: ready: $BIN (llama.cpp $COMMIT, $SIMD)" >&2
