/* test_layers.c — the dependency rule (docs/design.md, "Layers"): tools/check_layers.sh finds no
 * cycle and no violation on this build; on small synthetic trees it reports each kind of problem
 * (include cycle, definition cycle, folder cycle, a dependency against the table) with the files
 * and symbols involved, and passes a tree that points one way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"

static char out[1 << 16];

static void test_layers_of_this_build(void) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sh tools/check_layers.sh '%s' 2>&1", t_build());
    int rc = t_sh(cmd, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "no cycles, no violations"), "check_layers exited %d: %s", rc, out);
}

typedef struct tfile {
    const char *path, *text;
} tfile;

/* Write files[] under a new temporary folder, compile every .c into DIR/build/obj/<path>.o as the
 * Makefile does; the folder's name goes to dir (removed by the caller). 0 on success. */
static int make_tree(char *dir, size_t cap, const tfile *files, int n) {
    snprintf(dir, cap, "%s/e0-layers-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) return -1;
    char path[1024], cmd[2048];
    for (int i = 0; i < n; i++) {
        snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s/%s')\"", dir, files[i].path);
        if (t_sh(cmd, NULL, 0) != 0) return -1;
        snprintf(path, sizeof path, "%s/%s", dir, files[i].path);
        FILE *f = fopen(path, "w");
        if (!f) return -1;
        fputs(files[i].text, f);
        if (fclose(f) != 0) return -1;
    }
    const char *cc = getenv("CC") ? getenv("CC") : "cc";
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for c in $(find src -name '*.c'); do mkdir -p build/obj/$(dirname $c) && "
             "%s -std=c11 -Isrc -c $c -o build/obj/${c%%.c}.o || exit 1; done 2>&1",
             dir, cc);
    return t_sh(cmd, NULL, 0) == 0 ? 0 : -1;
}

static void remove_tree(const char *dir) {
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    t_sh(cmd, NULL, 0);
}

static int check_tree(const char *dir) {
    char cmd[2048], here[1024];
    if (!getcwd(here, sizeof here)) return -1;
    snprintf(cmd, sizeof cmd, "sh '%s/tools/check_layers.sh' '%s/build' '%s' 2>&1", here, dir, dir);
    return t_sh(cmd, out, sizeof out);
}

#define EXPECT(s) CHECKF(strstr(out, s), "missing \"%s\" in:\n%s", s, out)

static void test_layers_reports_each_problem(void) {
    static const tfile files[] = {
        /* base/a.c <-> base/b.c: a definition cycle inside one folder */
        {"src/base/a.c", "int b_fn(void);\nint a_fn(void) { return b_fn(); }\n"},
        {"src/base/b.c", "int a_fn(void);\nint b_fn(void) { return 1; }\nint b_back(void) { return a_fn(); }\n"},
        /* x.h <-> y.h: an include cycle */
        {"src/base/x.h", "#ifndef X_H\n#define X_H\n#include \"base/y.h\"\n#endif\n"},
        {"src/base/y.h", "#ifndef Y_H\n#define Y_H\n#include \"base/x.h\"\n#endif\n"},
        /* base/z.h includes an engine header: against the table by an include alone */
        {"src/base/z.h", "#include \"engine/e.h\"\n"},
        {"src/engine/e.h", "int e_fn(void);\n"},
        /* engine -> gguf is allowed, gguf -> engine is not: a folder cycle and a violation */
        {"src/engine/e.c", "#include \"engine/e.h\"\nint g_fn(void);\nint e_fn(void) { return g_fn(); }\n"},
        {"src/gguf/g.c", "#include \"engine/e.h\"\nint g_fn(void) { return 2; }\nint g_back(void) { return e_fn(); }\n"},
        /* a folder the table does not know */
        {"src/misc/m.c", "int m_fn(void) { return 3; }\n"},
    };
    char dir[512];
    int rc = make_tree(dir, sizeof dir, files, (int)(sizeof files / sizeof files[0]));
    CHECKF(rc == 0, "could not build the synthetic tree in %s", dir);
    if (rc != 0) {
        remove_tree(dir);
        return;
    }
    rc = check_tree(dir);
    CHECKF(rc == 1, "check_layers exited %d on a tree with cycles:\n%s", rc, out);
    EXPECT("include cycle between files: src/base/x.h src/base/y.h");
    EXPECT("    src/base/x.h includes src/base/y.h");
    EXPECT("definition cycle between files: src/base/a.c src/base/b.c");
    EXPECT("    src/base/a.c uses from src/base/b.c: b_fn");
    EXPECT("    src/base/b.c uses from src/base/a.c: a_fn");
    EXPECT("definition cycle between files: src/engine/e.c src/gguf/g.c");
    EXPECT("cycle between folders: engine gguf");
    EXPECT("layer violation: gguf -> engine (gguf may use: quant base)");
    EXPECT("    src/gguf/g.c uses from src/engine/e.c: e_fn");
    EXPECT("    src/gguf/g.c includes src/engine/e.h");
    EXPECT("layer violation: base -> engine (base may use: nothing)");
    EXPECT("    src/base/z.h includes src/engine/e.h");
    EXPECT("layer violation: folder misc (src/misc/m.c) is not in the layer table");
    CHECKF(!strstr(out, "layer violation: engine -> gguf"), "engine -> gguf is allowed:\n%s", out);
    remove_tree(dir);
}

static void test_layers_passes_one_way_tree(void) {
    static const tfile files[] = {
        {"src/base/u.h", "int u_fn(void);\n"},
        {"src/base/u.c", "#include \"base/u.h\"\nint u_fn(void) { return 1; }\n"},
        {"src/gguf/g.h", "#include \"base/u.h\"\nint g_fn(void);\n"},
        {"src/gguf/g.c", "#include \"gguf/g.h\"\nint g_fn(void) { return u_fn(); }\n"},
        {"src/engine/e.c", "#include \"gguf/g.h\"\nint e_fn(void) { return g_fn() + u_fn(); }\n"},
        {"src/engine/e2.c", "int e_fn(void);\nint e2_fn(void) { return e_fn(); }\n"},
        /* an object whose source is gone is skipped, not counted */
        {"src/engine/gone.c", "int g_fn(void);\nint gone_fn(void) { return g_fn(); }\n"},
    };
    char dir[512], path[1024];
    int rc = make_tree(dir, sizeof dir, files, (int)(sizeof files / sizeof files[0]));
    CHECKF(rc == 0, "could not build the synthetic tree in %s", dir);
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/src/engine/gone.c", dir);
        CHECK(unlink(path) == 0);
        rc = check_tree(dir);
        CHECKF(rc == 0 && strstr(out, "6 files, 4 objects: no cycles, no violations"), "check_layers exited %d:\n%s", rc,
               out);
        EXPECT("note: skipped 1 object(s) whose source is gone:");
    }
    remove_tree(dir);
}

int main(void) {
    RUN(test_layers_of_this_build);
    RUN(test_layers_reports_each_problem);
    RUN(test_layers_passes_one_way_tree);
    return T_DONE();
}
