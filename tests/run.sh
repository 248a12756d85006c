#!/bin/sh
# Run every test binary in $1/tests; count its "ok" / "FAIL" / "skip NAME: reason" lines (tests/t.h).
# A binary that crashes or exits non-zero without reporting a failure counts as one failure, and
# so does one that reports nothing at all. Shared data: $E0_SHARED (default ../shared). The last
# line is always "N passed, N failed, N skipped"; the exit status is 0 only with 0 failed.
BUILD=${1:-build}
export E0_BUILD="$BUILD" E0_SHARED="${E0_SHARED:-../shared}"
pass=0; fail=0; skip=0
log="$BUILD/test-logs"; mkdir -p "$log"
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    start=$(date +%s)
    "$t" > "$log/$name.out" 2>&1
    rc=$?
    p=$(grep -c '^ok ' "$log/$name.out"); f=$(grep -c '^FAIL ' "$log/$name.out"); s=$(grep -c '^skip ' "$log/$name.out")
    grep -E '^(FAIL |skip |  check failed)' "$log/$name.out" | head -40
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exited with status $rc"; tail -5 "$log/$name.out"; f=1
    elif [ $((p + f + s)) -eq 0 ]; then
        echo "FAIL $name: reported no test"; f=1
    fi
    echo "$name: $p passed, $f failed, $s skipped ($(( $(date +%s) - start ))s)"
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
done
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
