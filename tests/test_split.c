/* test_split.c — models split into several GGUF files (llama.cpp's gguf-split layout, gguf_split.c):
 * the directory of the whole model from its first file, the errors for a later file, a missing,
 * foreign or misnamed one, a tensor in two files and a wrong split.tensors.count, and the engine
 * on a split model: the same logits as the single file, resident and with experts streamed from
 * the other files (O_DIRECT and cached reads); and llama.cpp reads the split files this test
 * writes as it reads the single file (so both sides agree on the layout). Model:
 * ../shared/golden/qwen3moe.gguf, split into 3 files written into the build folder. */
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "t.h"
#include "t_llamacpp.h"
#include "t_split.h"

static char dir[1024], bin[1024], src[1024], first[1200];

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static const char *path_in(const char *name) {
    static char p[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* The split model's directory is the single file's: every tensor, its shape, type and bytes. */
static void test_directory(void) {
    e0_err e;
    gguf_file *one = gguf_open(src, &e), *f = gguf_open(first, &e);
    CHECKF(one && f, "%s", e.msg);
    if (!one || !f) {
        gguf_close(one);
        gguf_close(f);
        return;
    }
    CHECK(one->n_splits == 1 && one->total_size == one->file_size && one->splits[0].fd == one->fd);
    CHECK(f->n_splits == 3 && f->n_tensors == one->n_tensors);
    CHECK(f->n_kv == one->n_kv + 3); /* split.no, split.count, split.tensors.count */
    uint64_t sum = 0, per_file[3] = {0};
    for (int i = 0; i < 3; i++) sum += file_size(path_in(i == 0 ? "q3-00001-of-00003.gguf" : i == 1 ? "q3-00002-of-00003.gguf" : "q3-00003-of-00003.gguf"));
    CHECKF(f->total_size == sum && f->file_size < sum, "total %llu, files %llu", (unsigned long long)f->total_size,
           (unsigned long long)sum);
    int bad = 0;
    for (uint64_t i = 0; i < one->n_tensors; i++) {
        const gguf_tensor *a = &one->tensors[i], *b = gguf_find_tensor(f, a->name);
        if (!b || b->type != a->type || b->n_dims != a->n_dims || memcmp(b->ne, a->ne, sizeof a->ne) || b->nbytes != a->nbytes ||
            b->split >= 3) {
            bad++;
            continue;
        }
        per_file[b->split]++;
        uint8_t *x = malloc(a->nbytes), *y = malloc(b->nbytes);
        if (!x || !y || gguf_read_tensor(one, a, 0, x, a->nbytes, &e) || gguf_read_tensor(f, b, 0, y, b->nbytes, &e) ||
            memcmp(x, y, a->nbytes))
            bad++;
        free(x);
        free(y);
    }
    CHECKF(bad == 0, "%d tensors differ", bad);
    CHECK(per_file[0] && per_file[1] && per_file[2]);
    /* reads stay inside the tensor */
    const gguf_tensor *t = &f->tensors[f->n_tensors - 1];
    uint8_t byte;
    CHECK(t->split == 2 && gguf_read_tensor(f, t, t->nbytes - 1, &byte, 1, &e) == 0);
    CHECK(gguf_read_tensor(f, t, t->nbytes, &byte, 1, &e) == -1 && strstr(e.msg, "outside tensor"));
    CHECK(gguf_read_tensor(f, t, UINT64_MAX, &byte, 2, &e) == -1);
    gguf_close(one);
    gguf_close(f);
}

/* A small split file written by hand: split keys as given (count < 0: none), tensors named. */
static void write_part(const char *path, int no, int count, int tensors_count, const char *const *names, int n) {
    e0_err e;
    gguf_writer *w = gguf_writer_open(path, &e);
    if (!w) return;
    gguf_writer_kv_str(w, "general.architecture", "llama");
    if (count >= 0) {
        uint16_t k = (uint16_t)no, c = (uint16_t)count;
        gguf_writer_kv(w, "split.no", GGUF_U16, &k);
        gguf_writer_kv(w, "split.count", GGUF_U16, &c);
    }
    if (tensors_count >= 0) gguf_writer_kv_i32(w, "split.tensors.count", tensors_count);
    const uint64_t ne[1] = {8};
    for (int i = 0; i < n; i++) gguf_writer_tensor(w, names[i], 1, ne, 0 /* f32 */);
    float v[8] = {0};
    for (int i = 0; i < n; i++) gguf_writer_data(w, v, sizeof v);
    CHECKF(gguf_writer_close(w, &e) == 0, "%s", e.msg);
}

static void expect_error(const char *path, const char *a, const char *b) {
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    CHECKF(!f && strstr(e.msg, a) && (!b || strstr(e.msg, b)), "%s: %s", path, f ? "opened" : e.msg);
    gguf_close(f);
}

static void test_errors(void) {
    /* a later file: name the first */
    expect_error(path_in("q3-00002-of-00003.gguf"), "file 2 of a model split into 3 files: open the first",
                 "q3-00001-of-00003.gguf");
    /* a missing file */
    const char *third = path_in("q3-00003-of-00003.gguf"), *away = path_in("q3-away.gguf");
    CHECK(rename(third, away) == 0);
    expect_error(first, "q3-00003-of-00003.gguf", "file 3 of the 3");
    CHECK(rename(away, third) == 0);
    /* the first under another name: the others cannot be found */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", first, path_in("renamed.gguf"));
    CHECK(t_sh(cmd, NULL, 0) == 0);
    expect_error(path_in("renamed.gguf"), "does not end in -00001-of-00003.gguf", NULL);

    /* hand-made pairs */
    const char *ab[] = {"a", "b"}, *a[] = {"a"}, *b[] = {"b"};
    write_part(path_in("p-00001-of-00002.gguf"), 0, 2, 2, a, 1);
    write_part(path_in("p-00002-of-00002.gguf"), 1, 2, -1, b, 1);
    e0_err e;
    gguf_file *f = gguf_open(path_in("p-00001-of-00002.gguf"), &e);
    CHECKF(f && f->n_splits == 2 && f->n_tensors == 2 && gguf_find_tensor(f, "b") && gguf_find_tensor(f, "b")->split == 1,
           "%s", f ? "wrong directory" : e.msg);
    gguf_close(f);
    /* a tensor in both files */
    write_part(path_in("p-00002-of-00002.gguf"), 1, 2, -1, a, 1);
    expect_error(path_in("p-00001-of-00002.gguf"), "tensor 'a' is in both", "p-00002-of-00002.gguf");
    /* a foreign second file: another split count, another index, no split keys */
    write_part(path_in("p-00002-of-00002.gguf"), 1, 3, -1, b, 1);
    expect_error(path_in("p-00001-of-00002.gguf"), "not file 2 of the 2", "its split.count is 3");
    write_part(path_in("p-00002-of-00002.gguf"), 0, 2, -1, b, 1);
    expect_error(path_in("p-00001-of-00002.gguf"), "not file 2 of the 2", "its split.no 0");
    write_part(path_in("p-00002-of-00002.gguf"), 0, -1, -1, b, 1);
    expect_error(path_in("p-00001-of-00002.gguf"), "not file 2 of the 2", "its split.count is 1");
    /* split.tensors.count says otherwise */
    write_part(path_in("p-00002-of-00002.gguf"), 1, 2, -1, b, 1);
    write_part(path_in("p-00001-of-00002.gguf"), 0, 2, 3, a, 1);
    expect_error(path_in("p-00001-of-00002.gguf"), "split.tensors.count is 3 but the 2 files hold 2 tensors", NULL);
    /* keys out of range */
    write_part(path_in("p-00001-of-00002.gguf"), 2, 2, -1, a, 1);
    expect_error(path_in("p-00001-of-00002.gguf"), "split.no = 2 out of range", NULL);
    write_part(path_in("p-00001-of-00002.gguf"), 0, 0, -1, a, 1);
    expect_error(path_in("p-00001-of-00002.gguf"), "split.count = 0 out of range", NULL);
    /* split.count = 1: a model in one file, whatever its name */
    write_part(path_in("one.gguf"), 0, 1, 2, ab, 2);
    f = gguf_open(path_in("one.gguf"), &e);
    CHECKF(f && f->n_splits == 1 && f->n_tensors == 2, "%s", f ? "wrong directory" : e.msg);
    gguf_close(f);
}

/* The engine on the split model: the logits of the single file, byte for byte. */
static void test_engine(void) {
    const char *modes[] = {
        "",
        "--model-option experts=stream --model-option expert_slots=3 --model-option routing=actual --model-option expert_read=direct",
        "--model-option experts=stream --model-option expert_slots=3 --model-option routing=actual --model-option expert_read=cached",
    };
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' logits -m '%s' --tokens 1,2,3,50,60,70,80,90 --out '%s' 2>&1", bin, src, path_in("one.bin"));
    CHECKF(t_sh(cmd, out, sizeof out) == 0, "%s", out);
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "'%s' logits -m '%s' --tokens 1,2,3,50,60,70,80,90 %s --out '%s' 2>&1 && cmp '%s' '%s'", bin,
                 first, modes[i], path_in("split.bin"), path_in("one.bin"), path_in("split.bin"));
        CHECKF(t_sh(cmd, out, sizeof out) == 0, "%s: %s", modes[i], out);
    }
    snprintf(cmd, sizeof cmd, "'%s' info -m '%s' 2>&1", bin, first);
    CHECKF(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "files:           3 (a split model") && strstr(out, "total size:"),
           "%s", out);
    /* diskbw reads the largest file */
    snprintf(cmd, sizeof cmd, "'%s' diskbw -m '%s' --reads 16 --block-kib 4 --threads 2 2>&1", bin, first);
    CHECKF(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "; of ") && strstr(out, "q3-00003-of-00003.gguf)"), "%s", out);
    /* bench's identity of the model names every file */
    snprintf(cmd, sizeof cmd, "'%s' bench -m '%s' --prompt short --warmup 0 --ntok 2 2>/dev/null", bin, first);
    static char row[1 << 16];
    CHECK(t_sh(cmd, row, sizeof row) == 0 && strstr(row, "\"split_files\"") && strstr(row, "q3-00003-of-00003.gguf") &&
          strstr(row, "\"total_size\""));
}

/* llama.cpp's logits of the split files = its logits of the single file. */
static void test_llamacpp_reads_it(void) {
    if (unavailable[0]) SKIP("%s", unavailable);
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' logits '%s' --tokens 1,2,3,50,60 --rows 0,4 --out '%s' 2>&1 && '%s' logits '%s' --tokens 1,2,3,50,60 --rows 0,4 "
             "--out '%s' 2>&1 && cmp '%s' '%s'",
             ref_tool, src, path_in("ref-one.bin"), ref_tool, first, path_in("ref-split.bin"), path_in("ref-one.bin"),
             path_in("ref-split.bin"));
    CHECKF(t_sh(cmd, out, sizeof out) == 0, "%s", out);
    n_computed++; /* (t_llamacpp.h's counters: no reference cache here) */
    (void)n_cached;
}

int main(void) {
    if (!t_need_shared("golden/qwen3moe.gguf", NULL)) return T_DONE();
    snprintf(dir, sizeof dir, "%s/test-split", t_build());
    snprintf(bin, sizeof bin, "%s/bin/edge0-infer", t_build());
    snprintf(src, sizeof src, "%s/golden/qwen3moe.gguf", t_shared());
    mkdir(dir, 0755);
    t_begin("write the split model");
    char prefix[1100];
    snprintf(prefix, sizeof prefix, "%s/q3", dir);
    CHECK(t_write_split(src, prefix, 3, first, sizeof first) == 0);
    t_end();
    if (t_nfail) return T_DONE();
    RUN(test_directory);
    RUN(test_errors);
    RUN(test_engine);
    t_llamacpp_setup(); /* its own test line: llamacpp/install */
    RUN(test_llamacpp_reads_it);
    return T_DONE();
}
