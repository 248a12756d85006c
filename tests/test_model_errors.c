/* test_model_errors.c — malformed models and bad flags through the CLI: each must give exactly one
 * clear error line on stderr and exit status 1 (never a crash or a silently wrong answer).
 * Broken models are made by rewriting a small golden model with one thing changed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "t.h"

static char dir[512];

/* A rewrite of `src`: kv `key` replaced by a u32/i-value or string (or dropped), tensor `drop`
 * left out. */
typedef struct {
    const char *key;
    int kind; /* 0: none, 1: u32 value, 2: string value, 3: drop key, 4: u32 array of arr_n entries
               * u32, u32 + 1, u32, ... (arr_same: all u32) */
    uint32_t u32;
    const char *str;
    const char *drop_tensor;
    const char *short_arr; /* a string/number array key to shorten by one element */
    uint32_t arr_n;
    int arr_same;
} mutation;

static int rewrite(const char *src, const char *dst, const mutation *mu) {
    e0_err e;
    gguf_file *f = gguf_open(src, &e);
    if (!f) return printf("  cannot open %s: %s\n", src, e.msg), -1;
    gguf_writer *w = gguf_writer_open(dst, &e);
    if (!w) return gguf_close(f), -1;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        if (mu->key && !strcmp(kv->key, mu->key)) {
            if (mu->kind == 1) gguf_writer_kv_u32(w, kv->key, mu->u32);
            else if (mu->kind == 2) gguf_writer_kv_str(w, kv->key, mu->str);
            else if (mu->kind == 4) {
                uint32_t a[64];
                for (uint32_t j = 0; j < mu->arr_n && j < 64; j++) a[j] = mu->u32 + (mu->arr_same ? 0 : (j & 1));
                gguf_writer_kv_arr(w, kv->key, GGUF_U32, a, mu->arr_n < 64 ? mu->arr_n : 64);
            }
            continue;
        }
        if (mu->short_arr && !strcmp(kv->key, mu->short_arr) && kv->type == GGUF_ARR) {
            gguf_kv copy = *kv;
            copy.v.arr.n--;
            gguf_writer_kv_copy(w, &copy);
            continue;
        }
        gguf_writer_kv_copy(w, kv);
    }
    if (mu->key && mu->kind == 1 && !gguf_find(f, mu->key)) gguf_writer_kv_u32(w, mu->key, mu->u32);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (mu->drop_tensor && !strcmp(t->name, mu->drop_tensor)) continue;
        gguf_writer_tensor(w, t->name, t->n_dims, t->ne, t->type);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (mu->drop_tensor && !strcmp(t->name, mu->drop_tensor)) continue;
        void *buf = malloc(t->nbytes);
        gguf_read(f, t->offset, buf, t->nbytes, &e);
        gguf_writer_data(w, buf, t->nbytes);
        free(buf);
    }
    gguf_close(f);
    return gguf_writer_close(w, &e);
}

/* Replace every occurrence of `s` in `line` by "<path>" (in place). */
static void blank(char *line, const char *s) {
    size_t n = strlen(s);
    for (char *p; n && (p = strstr(line, s));) {
        memmove(p + 6, p + n, strlen(p + n) + 1);
        memcpy(p, "<path>", 6);
    }
}

/* Run the CLI; expect exit 1 and exactly one non-empty stderr line containing `want`. With
 * in_text set, `want` must be in the message itself: the paths of the temp folder and the shared
 * data (which prefix most messages) are blanked out before the match, so a file name can never
 * satisfy the check. */
static void expect_error_in(const char *args, const char *want, int in_text) {
    char cmd[4096], errf[600], line[2048] = "";
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer %s >/dev/null 2>%s", t_build(), args, errf);
    int st = system(cmd);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    CHECKF(rc == 1, "'%s' exited %d, expected 1", args, rc);
    FILE *f = fopen(errf, "r");
    int lines = 0;
    char buf[2048];
    while (f && fgets(buf, sizeof buf, f)) {
        if (!lines) snprintf(line, sizeof line, "%s", buf);
        lines++;
    }
    if (f) fclose(f);
    if (in_text) {
        blank(line, dir);
        blank(line, t_shared());
    }
    CHECKF(lines == 1, "'%s': %d stderr lines, expected 1", args, lines);
    CHECKF(strstr(line, want) != NULL, "'%s': error '%s' does not mention '%s'", args, line, want);
}
static void expect_error(const char *args, const char *want) { expect_error_in(args, want, 1); }
/* The message must name `path` (a path the user gave). */
static void expect_error_path(const char *args, const char *path) { expect_error_in(args, path, 0); }

static void broken_model_at(const char *name, const char *src, mutation mu, const char *want);
static void broken_model(const char *name, const char *base, mutation mu, const char *want) {
    char src[600];
    snprintf(src, sizeof src, "%s/golden/%s", t_shared(), base);
    broken_model_at(name, src, mu, want);
}

/* The same from any model file. */
static void broken_model_at(const char *name, const char *src, mutation mu, const char *want) {
    char dst[700], args[1600];
    snprintf(dst, sizeof dst, "%s/broken.gguf", dir); /* a neutral name: it must not match `want` */
    t_begin(name);
    CHECKF(rewrite(src, dst, &mu) == 0, "could not write %s", dst);
    snprintf(args, sizeof args, "logits --model %s --tokens 1,2 --out %s/x.bin", dst, dir);
    expect_error(args, want);
    snprintf(args, sizeof args, "info --model %s", dst);
    expect_error(args, want);
    t_end();
    unlink(dst);
}

/* Patch the u32 type field of tensor `name`'s info in file `path`. */
static int patch_tensor_type(const char *path, const char *name, uint32_t type) {
    size_t len;
    e0_err e;
    char *buf = e0_read_file(path, 1 << 26, &len, &e);
    if (!buf) return -1;
    size_t nl = strlen(name);
    for (size_t i = 8; i + nl + 4 < len; i++) {
        uint64_t sl;
        memcpy(&sl, buf + i - 8, 8);
        if (sl != nl || memcmp(buf + i, name, nl)) continue;
        uint32_t nd;
        memcpy(&nd, buf + i + nl, 4);
        size_t at = i + nl + 4 + (size_t)nd * 8;
        memcpy(buf + at, &type, 4);
        FILE *f = fopen(path, "wb");
        fwrite(buf, 1, len, f);
        fclose(f);
        free(buf);
        return 0;
    }
    free(buf);
    return -1;
}

int main(void) {
    if (!t_need_shared("golden/stories260K.gguf", "golden/stories260K-moe4.gguf", NULL)) return T_DONE();
    snprintf(dir, sizeof dir, "%s/test-model-errors", t_build());
    mkdir(dir, 0755);
    const char *moe = "stories260K-moe4.gguf", *dense = "stories260K.gguf";
    broken_model("block_count 100000", dense, (mutation){.key = "llama.block_count", .kind = 1, .u32 = 100000}, "block_count");
    broken_model("embedding_length mismatch", dense, (mutation){.key = "llama.embedding_length", .kind = 1, .u32 = 128}, "shape");
    broken_model("head_count 0", dense, (mutation){.key = "llama.attention.head_count", .kind = 1, .u32 = 0}, "head_count");
    broken_model("expert_used_count > expert_count", moe, (mutation){.key = "llama.expert_used_count", .kind = 1, .u32 = 5}, "expert_used_count");
    broken_model("missing tensor", dense, (mutation){.drop_tensor = "blk.1.ffn_norm.weight"}, "blk.1.ffn_norm.weight");
    broken_model("missing rms epsilon", dense, (mutation){.key = "llama.attention.layer_norm_rms_epsilon", .kind = 3}, "layer_norm_rms_epsilon");
    broken_model("expert_count on a dense architecture", "qwen2-dense.gguf", (mutation){.key = "qwen2.expert_count", .kind = 1, .u32 = 4}, "qwen2.expert_count");
    broken_model("MoE architecture without expert_count", "qwen3moe.gguf", (mutation){.key = "qwen3moe.expert_count", .kind = 3}, "qwen3moe.expert_count");
    broken_model("unsupported architecture", dense, (mutation){.key = "general.architecture", .kind = 2, .str = "mamba"}, "mamba");
    broken_model("scores shorter than tokens", dense, (mutation){.short_arr = "tokenizer.ggml.scores"}, "tokenizer.ggml.scores");
    broken_model("token_type shorter than tokens", dense, (mutation){.short_arr = "tokenizer.ggml.token_type"}, "tokenizer.ggml.token_type");
    broken_model("bos id >= n_vocab", dense, (mutation){.key = "tokenizer.ggml.bos_token_id", .kind = 1, .u32 = 512}, "bos");
    broken_model("eos id >= n_vocab", dense, (mutation){.key = "tokenizer.ggml.eos_token_id", .kind = 1, .u32 = 70000}, "eos");

    /* hybrid models (a synth qwen35moe): their ssm.* keys, sections, MTP count, DeltaNet tensors */
    char hyb[700], cmd[1600];
    snprintf(hyb, sizeof hyb, "%s/hybrid.gguf", dir);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch qwen35moe --type f32 --out %s >/dev/null 2>&1", t_build(), hyb);
    if (t_sh(cmd, NULL, 0) == 0) {
        broken_model_at("hybrid: inner_size != heads x state", hyb, (mutation){.key = "qwen35moe.ssm.inner_size", .kind = 1, .u32 = 100}, "inner_size");
        broken_model_at("hybrid: value heads not a multiple of key heads", hyb, (mutation){.key = "qwen35moe.ssm.group_count", .kind = 1, .u32 = 3}, "multiple");
        broken_model_at("hybrid: state_size 0", hyb, (mutation){.key = "qwen35moe.ssm.state_size", .kind = 1, .u32 = 0}, "state_size");
        broken_model_at("hybrid: no conv_kernel", hyb, (mutation){.key = "qwen35moe.ssm.conv_kernel", .kind = 3}, "qwen35moe.ssm.conv_kernel");
        broken_model_at("hybrid: no rope sections", hyb, (mutation){.key = "qwen35moe.rope.dimension_sections", .kind = 3}, "dimension_sections");
        broken_model_at("hybrid: full_attention_interval 0", hyb, (mutation){.key = "qwen35moe.full_attention_interval", .kind = 1, .u32 = 0}, "full_attention_interval");
        broken_model_at("hybrid: every block MTP", hyb, (mutation){.key = "qwen35moe.nextn_predict_layers", .kind = 1, .u32 = 4}, "nextn_predict_layers");
        broken_model_at("hybrid: missing DeltaNet tensor", hyb, (mutation){.drop_tensor = "blk.1.ssm_a"}, "blk.1.ssm_a");
        broken_model_at("hybrid: interval making a DeltaNet layer attention", hyb, (mutation){.key = "qwen35moe.full_attention_interval", .kind = 1, .u32 = 1}, "blk.0.attn_q.weight");
        unlink(hyb);
    } else {
        t_begin("hybrid models");
        CHECKF(0, "%s failed", cmd);
        t_end();
    }

    /* per-layer arrays (llama.cpp's get_key_or_arr keys) on a glm4moe with an MTP block: 3 blocks */
    snprintf(hyb, sizeof hyb, "%s/glm4moe.gguf", dir);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch glm4moe --n-layer 2 --mtp --type f32 --out %s >/dev/null 2>&1", t_build(), hyb);
    if (t_sh(cmd, NULL, 0) == 0) {
        broken_model_at("per-layer head_count_kv that differs between layers", hyb,
                        (mutation){.key = "glm4moe.attention.head_count_kv", .kind = 4, .u32 = 2, .arr_n = 3}, "differs between layers");
        broken_model_at("per-layer expert_feed_forward_length of the wrong length", hyb,
                        (mutation){.key = "glm4moe.expert_feed_forward_length", .kind = 4, .u32 = 64, .arr_n = 2, .arr_same = 1},
                        "expected 3");
        broken_model_at("per-layer head_count with a zero entry", hyb,
                        (mutation){.key = "glm4moe.attention.head_count", .kind = 4, .u32 = 0, .arr_n = 3}, "out of range");
        unlink(hyb);
    } else {
        t_begin("glm4moe per-layer arrays");
        CHECKF(0, "%s failed", cmd);
        t_end();
    }

    char model[600], args[1600], path[700];
    snprintf(model, sizeof model, "%s/golden/%s", t_shared(), dense);

    t_begin("unsupported tensor type names type and tensor");
    snprintf(path, sizeof path, "%s/broken.gguf", dir);
    mutation none = {0};
    CHECK(rewrite(model, path, &none) == 0);
    CHECK(patch_tensor_type(path, "output_norm.weight", 4) == 0);
    snprintf(args, sizeof args, "logits --model %s --tokens 1 --out %s/x.bin", path, dir);
    expect_error(args, "output_norm.weight");
    expect_error(args, "4");
    t_end();

    t_begin("truncated file");
    snprintf(args, sizeof args, "head -c 600000 %s > %s/trunc.gguf", model, dir);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "run --model %s/trunc.gguf --tokens 1 -n 2 --temp 0 --print-ids", dir);
    expect_error_path(args, "trunc.gguf");
    expect_error(args, "outside the file");
    t_end();

    t_begin("missing file, directory");
    expect_error_path("info --model /nonexistent/model.gguf", "/nonexistent/model.gguf");
    snprintf(args, sizeof args, "info --model %s", dir);
    expect_error_path(args, dir);
    t_end();

    t_begin("context overflow");
    snprintf(args, sizeof args, "run --model %s --tokens 1,2,3,4,5,6 -n 8 -c 8 --temp 0 --print-ids", model);
    expect_error(args, "context");
    snprintf(args, sizeof args, "logits --model %s -c 4 --tokens 1,2,3,4,5 --out %s/x.bin", model, dir);
    expect_error(args, "context");
    t_end();

    t_begin("bad flag values");
    snprintf(args, sizeof args, "run --model %s --tokens 1 -n abc --temp 0 --print-ids", model);
    expect_error(args, "-n");
    snprintf(args, sizeof args, "run --model %s --tokens 1 -n 4 -t 0 --temp 0", model);
    expect_error(args, "-t");
    snprintf(args, sizeof args, "run --model %s --tokens 1,,2 -n 4 --temp 0", model);
    expect_error(args, "--tokens");
    snprintf(args, sizeof args, "run --model %s --tokens 1,512 -n 4 --temp 0", model);
    expect_error(args, "512");
    snprintf(args, sizeof args, "run --model %s --tokens 1 -n 4 --bogus", model);
    expect_error(args, "--bogus");
    snprintf(args, sizeof args, "logits --model %s --tokens 1", model);
    expect_error(args, "--out");
    expect_error("frobnicate", "frobnicate");
    t_end();
    return T_DONE();
}
