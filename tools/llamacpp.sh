#!/bin/sh
# llamacpp.sh — fetch a prebuilt llama.cpp and build the comparison tools build/bin/llamacpp-bench
# (speed, tools/side_by_side.sh) and build/bin/llamacpp-ref (references for tests/test_llamacpp.c).
#
# Usage: sh tools/llamacpp.sh [BUILD]      (make llamacpp)
#
# Only the measurement harness uses llama.cpp; the engine never links it. Everything lands in
# BUILD (default build/):
#   BUILD/llamacpp/npm   npm package node-llama-cpp (pinned) and its prebuilt Linux x64 CPU
#                        libraries @node-llama-cpp/linux-x64 (libllama, libggml*, one
#                        libggml-cpu-<microarchitecture>.so per x86 level; ggml loads the best)
#   BUILD/llamacpp/src   the llama.cpp source the package was built from (its git bundle), for
#                        include/llama.h and ggml/include/*.h
#   BUILD/llamacpp/lib   the libraries, copied; llamacpp-bench finds them through its rpath
#   BUILD/bin/llamacpp-bench   built from tools/llamacpp_bench.c
#   BUILD/bin/llamacpp-ref     built from tools/llamacpp_ref.c
# Each step is skipped when its result is already there for the pinned version.
# Exit status: 0 ready; 3 when the npm registry cannot be reached (or npm is missing), so that
# tests can report themselves skipped; 1 on any other failure.
set -eu

BUILD=${1:-build}
VERSION=3.21.1
PKG=node-llama-cpp@$VERSION
BIN_PKG=@node-llama-cpp/linux-x64@$VERSION
CC=${CC:-cc}
TOP=$BUILD/llamacpp
NPM_DIR=$TOP/npm
SRC_DIR=$TOP/src
LIB_DIR=$TOP/lib
OUT=$BUILD/bin/llamacpp-bench
BENCH_SRC=tools/llamacpp_bench.c

die() { echo "llamacpp.sh: $*" >&2; exit 1; }
offline() { echo "llamacpp.sh: $*" >&2; exit 3; }

[ -f "$BENCH_SRC" ] || die "run from the source tree ($BENCH_SRC not found)"
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || die "only Linux x86-64 is supported (prebuilt libraries), not $(uname -s)-$(uname -m)"
command -v npm >/dev/null 2>&1 || [ -f "$NPM_DIR/.installed-$VERSION" ] ||
    offline "'npm' not found; install it (Debian: apt-get install npm)"
for tool in git "$CC"; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found; install it (Debian: apt-get install npm git gcc)"
done

# 1. npm packages: the prebuilt libraries and the source bundle. --ignore-scripts: the
#    package's postinstall would try to download or build a llama.cpp of its own.
STAMP=$NPM_DIR/.installed-$VERSION
if [ ! -f "$STAMP" ]; then
    echo "llamacpp.sh: installing $PKG and $BIN_PKG into $NPM_DIR" >&2
    rm -rf "$NPM_DIR"
    mkdir -p "$NPM_DIR"
    if ! npm install --prefix "$NPM_DIR" --ignore-scripts --no-audit --no-fund --save-exact --omit=optional \
        --fetch-retries=1 --fetch-timeout=60000 "$PKG" "$BIN_PKG" >"$TOP/npm-install.log" 2>&1; then
        tail -n 5 "$TOP/npm-install.log" >&2
        offline "npm install of $PKG failed (is the npm registry reachable? full log: $TOP/npm-install.log)"
    fi
    touch "$STAMP"
fi
PREBUILT=$NPM_DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
BUNDLE=$NPM_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -d "$PREBUILT" ] || die "$PREBUILT missing: the package layout changed (remove $NPM_DIR and retry)"
[ -f "$BUNDLE" ] || die "$BUNDLE missing: the package layout changed (remove $NPM_DIR and retry)"

# 2. Headers from the bundled source, at the bundle's commit.
COMMIT=$(git bundle list-heads "$BUNDLE" | awk '$2 == "HEAD" { print $1; exit }')
[ -n "$COMMIT" ] || die "$BUNDLE has no HEAD"
if [ "$(git -C "$SRC_DIR" rev-parse HEAD 2>/dev/null || true)" != "$COMMIT" ]; then
    echo "llamacpp.sh: extracting llama.cpp source $COMMIT into $SRC_DIR" >&2
    rm -rf "$SRC_DIR"
    git clone --quiet --no-checkout "$BUNDLE" "$SRC_DIR" || die "git clone of $BUNDLE failed"
    git -C "$SRC_DIR" -c advice.detachedHead=false checkout --quiet "$COMMIT" || die "checkout of $COMMIT failed"
fi
[ -f "$SRC_DIR/include/llama.h" ] && [ -f "$SRC_DIR/ggml/include/ggml-backend.h" ] ||
    die "$SRC_DIR lacks include/llama.h or ggml/include/ggml-backend.h"

# 3. The libraries, under names fixed by their SONAMEs (libllama.v0.4.0.so, ...).
mkdir -p "$LIB_DIR"
for f in "$PREBUILT"/libllama*.so "$PREBUILT"/libggml*.so; do
    [ -f "$f" ] || die "no libllama/libggml libraries in $PREBUILT"
    case $f in *libllama-common*) continue ;; esac # the C++ helpers of llama.cpp's tools: unused
    cmp -s "$f" "$LIB_DIR/$(basename "$f")" || cp "$f" "$LIB_DIR/"
done
LIBLLAMA=$(ls "$LIB_DIR"/libllama*.so | head -n 1)
LIBGGML=$(ls "$LIB_DIR"/libggml.*so | head -n 1)
[ -f "$LIB_DIR/libggml-base.so" ] && [ -n "$LIBLLAMA" ] && [ -n "$LIBGGML" ] ||
    die "libllama, libggml or libggml-base missing in $LIB_DIR"
ls "$LIB_DIR"/libggml-cpu-*.so >/dev/null 2>&1 || die "no CPU backend (libggml-cpu-*.so) in $PREBUILT"

# 4. The tools, each rebuilt when its source, this script or the libraries are newer.
build_tool() { # build_tool SOURCE OUTPUT
    if [ ! -x "$2" ] || [ -n "$(find "$1" "$0" "$LIBLLAMA" -newer "$2" 2>/dev/null)" ]; then
        mkdir -p "$BUILD/bin"
        echo "llamacpp.sh: building $2" >&2
        # The rpath (and the tools' default backend directory) are relative to the binary, so
        # BUILD can be moved or copied as a whole.
        # shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader, not the shell
        $CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
            -I"$SRC_DIR/include" -I"$SRC_DIR/ggml/include" \
            -DLLAMACPP_PACKAGE="\"$PKG\"" \
            -DLLAMACPP_SOURCE_COMMIT="\"$COMMIT\"" \
            -o "$2.tmp" "$1" "$LIBLLAMA" "$LIBGGML" "$LIB_DIR/libggml-base.so" \
            -Wl,-rpath,'$ORIGIN/../llamacpp/lib' -ljansson -lm ||
            die "compiling $1 failed"
        mv "$2.tmp" "$2"
    fi
    "$2" --help >/dev/null 2>&1 || die "$2 does not start (missing libraries?): run it to see why"
}
build_tool "$BENCH_SRC" "$OUT"
build_tool tools/llamacpp_ref.c "$BUILD/bin/llamacpp-ref"
echo "llamacpp.sh: ready: $OUT, $BUILD/bin/llamacpp-ref ($PKG, llama.cpp source $COMMIT)" >&2
