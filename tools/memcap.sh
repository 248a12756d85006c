#!/bin/sh
# memcap.sh — run one command under a cgroup v1 memory limit (page cache included), for
# memory-capped comparisons of edge0-infer and llama.cpp. Needs root and /sys/fs/cgroup/memory.
#
# Usage: sh tools/memcap.sh LIMIT_BYTES FILE COMMAND [ARG...]
#
# FILE (the model; a split model's first file, and so all its files) is first dropped from the
# page cache (posix_fadvise DONTNEED through `dd iflag=nocache`): pages already cached are charged
# to whichever cgroup read them first, so a warm file would not count against the limit at all.
# The cgroup /sys/fs/cgroup/memory/e0-cap-<pid> is created, the command runs in it, and it is
# removed afterwards (also on Ctrl-C). Prints "memcap: peak B bytes, limit hit N times" on stderr.
# Exit status: the command's.
set -eu

die() { echo "memcap.sh: $*" >&2; exit 1; }
[ $# -ge 3 ] || die "usage: sh tools/memcap.sh LIMIT_BYTES FILE COMMAND [ARG...]"
LIMIT=$1
FILE=$2
shift 2
case $LIMIT in '' | *[!0-9]*) die "LIMIT_BYTES '$LIMIT' is not a whole number" ;; esac
[ -f "$FILE" ] || die "$FILE: no such file"
ROOT=/sys/fs/cgroup/memory
[ -d "$ROOT" ] && [ -f "$ROOT/cgroup.procs" ] || die "$ROOT missing: needs a cgroup v1 memory controller"
[ -w "$ROOT" ] || die "$ROOT is not writable (needs root)"

CG=$ROOT/e0-cap-$$
mkdir "$CG" || die "cannot create $CG"
cleanup() {
    # the command has exited; its cgroup is empty and can go
    rmdir "$CG" 2>/dev/null || echo "memcap.sh: could not remove $CG" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo "$LIMIT" > "$CG/memory.limit_in_bytes" || die "cannot set memory.limit_in_bytes"
# A split model (NAME-00001-of-0000N.gguf, llama.cpp's gguf-split names): all N of its files.
FILES=$FILE
case $FILE in
*-00001-of-[0-9][0-9][0-9][0-9][0-9].gguf)
    n=${FILE##*-of-}; n=${n%.gguf}; prefix=${FILE%-00001-of-*}; i=2
    while [ "$i" -le "$(expr "$n" + 0)" ]; do FILES="$FILES
$(printf '%s-%05d-of-%s.gguf' "$prefix" "$i" "$n")"; i=$((i + 1)); done ;;
esac
echo "$FILES" | while IFS= read -r f; do
    dd if="$f" iflag=nocache count=0 status=none || die "cannot drop $f from the page cache"
done

# A child shell joins the cgroup and then becomes the command; this shell stays outside.
set +e
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' memcap "$CG" "$@"
rc=$?
set -e
echo "memcap: limit $LIMIT bytes, peak $(cat "$CG/memory.max_usage_in_bytes") bytes, limit hit $(cat "$CG/memory.failcnt") times" >&2
exit $rc
