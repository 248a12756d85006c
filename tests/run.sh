#!/bin/sh
# Run every test binary in $1/tests; count "ok"/"FAIL" lines; a binary that crashes or exits
# non-zero without reporting a failure counts as one failure. Ends with "N passed, N failed".
BUILD=${1:-build}
export E0_BUILD="$BUILD" E0_SHARED="${E0_SHARED:-../shared}"
pass=0; fail=0
log="$BUILD/test-logs"; mkdir -p "$log"
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    start=$(date +%s)
    "$t" > "$log/$name.out" 2>&1
    rc=$?
    p=$(grep -c '^ok ' "$log/$name.out"); f=$(grep -c '^FAIL ' "$log/$name.out")
    grep -E '^(FAIL |  check failed)' "$log/$name.out" | head -40
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exited with status $rc"; tail -5 "$log/$name.out"; f=1
    fi
    echo "$name: $p passed, $f failed ($(( $(date +%s) - start ))s)"
    pass=$((pass + p)); fail=$((fail + f))
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
