#!/bin/sh
# check_layers.sh — checks the dependency rule of docs/design.md ("Layers") on a build.
#
# Usage: sh tools/check_layers.sh [--graph] [BUILD [ROOT]]   (BUILD default build, ROOT default .)
#        --graph also prints every folder -> folder dependency found, one per line.
#
# It reads two kinds of dependency:
#   include     the quoted #include lines of every .c/.h under ROOT/src and ROOT/bench, resolved
#               as the compiler does (-Isrc first, then the including file's own folder);
#               includes of system or generated ($(BUILD)/gen) headers are not part of the graph;
#   definition  `nm` on every object in BUILD/obj: file A uses file B when an undefined symbol of
#               A's object is defined in B's object. Each X.o is paired with its X.c (objects in
#               BUILD/obj/gen with BUILD/gen/X.c); an object whose source is gone is skipped.
# and reports, with the files and symbols involved:
#   (a) include cycles between files,
#   (b) definition cycles between source files (A uses B and B uses A, or longer rings),
#   (c) cycles between folders (both kinds of dependency, folder of each file),
#   (d) every dependency of one folder on another that the table below does not allow.
# Exit status: 0 and "no cycles, no violations" when clean, 1 when anything is reported, 2 when
# it cannot run. POSIX sh, find, grep, nm, awk.
set -eu

# The layer table: each folder and the folders it may use (listed in full, not transitively).
# src/quant/x86 counts as src/quant; "gen" is the tables generated into $(BUILD)/gen.
# The same table is in docs/design.md ("Layers"); change both together.
ALLOWED='
cli:        serve text text/jinja synth measure engine gguf quant base
serve:      text text/jinja engine measure gguf quant base
text:       text/jinja engine gguf quant base gen
text/jinja: base gen
synth:      engine gguf quant base
engine:     measure gguf quant base
measure:    base
gguf:       quant base
quant:      base
base:
gen:
bench:      measure gguf base
'

GRAPH=0
if [ "${1:-}" = --graph ]; then GRAPH=1; shift; fi
BUILD=${1:-build}
ROOT=${2:-.}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
cd "$ROOT" || exit 2
if [ ! -d "$BUILD/obj" ]; then
    echo "check_layers: no $BUILD/obj (build first: make)" >&2
    exit 2
fi

command -v nm >/dev/null || { echo "check_layers: nm not found (binutils)" >&2; exit 2; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
dirs=
for d in src bench; do [ -d "$d" ] && dirs="$dirs $d"; done
{
    printf '%s\n' "$ALLOWED" | sed -n 's/^\([a-z0-9_/]*\):/T \1/p'
    if [ -n "$dirs" ]; then
        # shellcheck disable=SC2086
        find $dirs -type f \( -name '*.c' -o -name '*.h' \) | sort | sed 's/^/F /'
        # shellcheck disable=SC2086
        find $dirs -type f \( -name '*.c' -o -name '*.h' \) -exec \
            grep -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' {} + | sort | sed 's/^/I /' || true
    fi
    find "$BUILD/obj" -type f -name '*.o' | sort | while IFS= read -r o; do
        rel=${o#"$BUILD/obj/"}
        c=${rel%.o}.c
        case $rel in
            gen/*) if [ -f "$BUILD/$c" ]; then echo "O $o $c"; else echo "X $o"; fi ;;
            src/*|bench/*) if [ -f "$c" ]; then echo "O $o $c"; else echo "X $o"; fi ;;
            *) ;;   # tools and anything else outside the layers
        esac
    done
    find "$BUILD/obj" -type f -name '*.o' -exec nm -A -P -g {} + | sed 's/^/N /'
} > "$tmp"

awk -v graph="$GRAPH" '
# Folder of a file: its directory without "src/"; quant/x86 is part of quant.
function folder(p,    d) {
    if (p ~ /^gen\//) return "gen"
    d = p
    sub(/\/[^\/]*$/, "", d)
    sub(/^src\//, "", d)
    if (d == "quant/x86") d = "quant"
    return d
}
function norm(p) {
    while (sub(/\/\.\//, "/", p)) {}
    sub(/^\.\//, "", p)
    while (sub(/[^\/.][^\/]*\/\.\.\//, "", p)) {}
    return p
}
# "#include \"x\"" in file from: -Isrc first, then from'"'"'s folder; "" if not a source file here.
function resolve(from, inc,    d, c) {
    c = norm("src/" inc)
    if (c in isfile) return c
    d = from
    sub(/\/[^\/]*$/, "", d)
    c = norm(d "/" inc)
    if (c in isfile) return c
    return ""
}
function addnode(k, a) {
    if (!((k, a) in isnode)) { isnode[k, a] = 1; node[k, ++nnode[k]] = a }
}
# Edge a -> b of kind k ("inc", "sym", "dir", "tab"); what: the symbol or line that makes it.
function addedge(k, a, b, what) {
    addnode(k, a); addnode(k, b)
    if (!((k, a, b) in edge)) {
        edge[k, a, b] = 1
        adj[k, a] = adj[k, a] " " b
        nwhat[k, a, b] = 0
    }
    if (what != "" && !((k, a, b, what) in seenwhat)) {
        seenwhat[k, a, b, what] = 1
        nw = ++nwhat[k, a, b]
        if (nw <= 6) whatlist[k, a, b] = whatlist[k, a, b] (nw > 1 ? ", " : "") what
    }
}
function whats(k, a, b) {
    return whatlist[k, a, b] (nwhat[k, a, b] > 6 ? sprintf(" (+%d more)", nwhat[k, a, b] - 6) : "")
}
# R[k, s, t] = 1 when t is reachable from s by edges of kind k (breadth-first from every node).
function closure(k,    i, s, head, tail, u, m, j, nb, q, parts) {
    for (i = 1; i <= nnode[k]; i++) {
        s = node[k, i]
        head = 1; tail = 1; q[1] = s
        while (head <= tail) {
            u = q[head++]
            m = split(adj[k, u], parts, " ")
            for (j = 1; j <= m; j++) {
                nb = parts[j]
                if (!((k, s, nb) in R)) { R[k, s, nb] = 1; q[++tail] = nb }
            }
        }
    }
}
# Groups of kind k that reach each other (strongly connected, size > 1 or a self-loop):
# comp[k, c, 1..ncomp_n[k, c]], ncomp[k].
function cycles(k,    i, j, s, t, c) {
    closure(k)
    ncomp[k] = 0
    for (i = 1; i <= nnode[k]; i++) {
        s = node[k, i]
        if (!((k, s, s) in R) || ((k, s) in incomp)) continue
        c = ++ncomp[k]
        ncomp_n[k, c] = 0
        for (j = i; j <= nnode[k]; j++) {
            t = node[k, j]
            if ((k, s, t) in R && (k, t, s) in R) { incomp[k, t] = c; comp[k, c, ++ncomp_n[k, c]] = t }
        }
    }
}
function members(k, c,    i, out) {
    out = ""
    for (i = 1; i <= ncomp_n[k, c]; i++) out = out (i > 1 ? " " : "") comp[k, c, i]
    return out
}
# Print the file-level edges behind folder edge x -> y (at most 12 lines).
function folderdetail(x, y,    i, n, line, cnt) {
    n = split(fdetail[x, y], line, "\n")
    cnt = 0
    for (i = 1; i <= n; i++) {
        if (line[i] == "") continue
        if (++cnt <= 12) print "    " line[i]
    }
    if (cnt > 12) printf "    ... and %d more\n", cnt - 12
}

$1 == "T" { f = $2; tab[f] = 1; ntab++; for (i = 3; i <= NF; i++) { allow[f, $i] = 1; addedge("tab", f, $i, "") } ; next }
$1 == "F" { isfile[$2] = 1; file[++nfiles] = $2; next }
$1 == "I" {
    line = substr($0, 3)
    from = line; sub(/:.*/, "", from)
    inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    incs[++ninc] = from SUBSEP inc
    next
}
$1 == "O" { src[$2] = $3; objsrc[++nobj] = $3; next }
$1 == "X" { stale = stale " " $2; nstale++; next }
$1 == "N" {
    o = $2; sub(/:$/, "", o)
    if (!(o in src)) next
    sym = $3; type = $4
    if (type == "U" || type == "w" || type == "v") { nuse++; usesrc[nuse] = src[o]; usesym[nuse] = sym }
    else defs[sym] = defs[sym] " " src[o]
    next
}
END {
    if (nobj == 0) { print "check_layers: no objects with sources in the build (build first: make)" > "/dev/stderr"; exit 2 }
    # The table must itself point one way.
    cycles("tab")
    if (ncomp["tab"] > 0) {
        print "check_layers: the layer table has a cycle: " members("tab", 1) > "/dev/stderr"
        exit 2
    }
    # Nodes in sorted file order, so that every listing comes out in the same order.
    for (i = 1; i <= nfiles; i++) { addnode("inc", file[i]); addnode("dir", folder(file[i])) }
    for (i = 1; i <= nobj; i++) addnode("sym", objsrc[i])
    for (i = 1; i <= ninc; i++) {
        split(incs[i], p, SUBSEP)
        to = resolve(p[1], p[2])
        if (to == "") continue
        addedge("inc", p[1], to, "")
        if (folder(p[1]) != folder(to)) {
            addedge("dir", folder(p[1]), folder(to), "")
            fdetail[folder(p[1]), folder(to)] = fdetail[folder(p[1]), folder(to)] p[1] " includes " to "\n"
        }
    }
    for (i = 1; i <= nuse; i++) {
        if (!(usesym[i] in defs)) continue   # from a system library
        n = split(defs[usesym[i]], d, " ")
        for (j = 1; j <= n; j++) if (d[j] != usesrc[i]) addedge("sym", usesrc[i], d[j], usesym[i])
    }
    for (i = 1; i <= nnode["sym"]; i++) {
        a = node["sym", i]
        m = split(adj["sym", a], bs, " ")
        for (j = 1; j <= m; j++) {
            b = bs[j]
            if (folder(a) == folder(b)) continue
            addedge("dir", folder(a), folder(b), "")
            fdetail[folder(a), folder(b)] = fdetail[folder(a), folder(b)] a " uses from " b ": " whats("sym", a, b) "\n"
        }
    }

    if (graph) for (i = 1; i <= nnode["dir"]; i++) {
        x = node["dir", i]
        m = split(adj["dir", x], ys, " ")
        for (j = 1; j <= m; j++) print "folder dependency: " x " -> " ys[j]
    }
    bad = 0
    cycles("inc")
    for (c = 1; c <= ncomp["inc"]; c++) {
        bad++
        print "include cycle between files: " members("inc", c)
        for (i = 1; i <= ncomp_n["inc", c]; i++) for (j = 1; j <= ncomp_n["inc", c]; j++) {
            a = comp["inc", c, i]; b = comp["inc", c, j]
            if (("inc", a, b) in edge) print "    " a " includes " b
        }
    }
    cycles("sym")
    for (c = 1; c <= ncomp["sym"]; c++) {
        bad++
        print "definition cycle between files: " members("sym", c)
        for (i = 1; i <= ncomp_n["sym", c]; i++) for (j = 1; j <= ncomp_n["sym", c]; j++) {
            a = comp["sym", c, i]; b = comp["sym", c, j]
            if (("sym", a, b) in edge) print "    " a " uses from " b ": " whats("sym", a, b)
        }
    }
    cycles("dir")
    for (c = 1; c <= ncomp["dir"]; c++) {
        bad++
        print "cycle between folders: " members("dir", c)
        for (i = 1; i <= ncomp_n["dir", c]; i++) for (j = 1; j <= ncomp_n["dir", c]; j++) {
            a = comp["dir", c, i]; b = comp["dir", c, j]
            if (("dir", a, b) in edge) { print "  " a " -> " b ":"; folderdetail(a, b) }
        }
    }
    for (i = 1; i <= nfiles; i++) {
        x = folder(file[i])
        if (!(x in tab) && !(x in unknown)) {
            unknown[x] = 1
            bad++
            print "layer violation: folder " x " (" file[i] ") is not in the layer table"
        }
    }
    for (i = 1; i <= nnode["dir"]; i++) {
        x = node["dir", i]
        if (!(x in tab)) continue   # reported above
        m = split(adj["dir", x], ys, " ")
        for (j = 1; j <= m; j++) {
            y = ys[j]
            if ((x, y) in allow) continue
            bad++
            may = ""
            for (k = 1; k <= nnode["tab"]; k++) if ((x, node["tab", k]) in allow) may = may " " node["tab", k]
            print "layer violation: " x " -> " y " (" x " may use:" (may == "" ? " nothing" : may) ")"
            folderdetail(x, y)
        }
    }
    if (nstale) print "note: skipped " nstale " object(s) whose source is gone:" stale
    if (bad) {
        printf "check_layers: %d problem(s) in %d files, %d objects\n", bad, nfiles, nobj
        exit 1
    }
    printf "check_layers: %d files, %d objects: no cycles, no violations\n", nfiles, nobj
}' "$tmp"
