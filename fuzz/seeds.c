/* seeds.c — builds the seed corpora of the fuzz targets from ../shared (never committed; `make
 * fuzz` runs it into $(BUILD)/fuzz/corpus):
 *   usage: fuzz_seeds SHARED OUTDIR    -> OUTDIR/{gguf,tokenizer,jinja,messages,trace,serve,grammar}/NNNN
 *   gguf       tiny synth models of every architecture (whole), and the first 4 KiB and 64 KiB of
 *              every GGUF in SHARED/golden and SHARED/tokenizer (header, metadata, tensor infos)
 *   tokenizer  the cases of SHARED/tokenizer/ *.inp for every vocabulary selector (text and
 *              prompt modes) and the expected ids of the .out files (detokenize mode)
 *   jinja      every template with each of its cases' variables as the JSON context
 *   messages   every case's messages (JSON mode) and its texts (text mode), per template
 *   trace      the first lines of every routing trace in SHARED/routing (header, a few steps),
 *              and a small hand-made one with weights and a missing layer
 *   grammar    the JSON grammar and hand-made GBNF grammars, each with a text cut into pieces
 *   serve      request bodies of the kinds tests/test_serve.c sends (chat, completions, tokenize,
 *              detokenize; good and bad), every template case's messages as a chat request, and
 *              stop-string inputs
 * The input formats are those described at the top of each fuzz_NAME.c. Without SHARED only
 * the synth models and a few built-in inputs are written. */
#include <errno.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "text/grammar.h"

static const char *out_dir;
static int n_written;

static void put(const char *target, const void *a, size_t alen, const void *b, size_t blen) {
    static int seq;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/seed-%05d", out_dir, target, seq++);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(a, 1, alen, f) != alen || (blen && fwrite(b, 1, blen, f) != blen) || fclose(f) != 0) {
        fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
        exit(1);
    }
    n_written++;
}

static void put2(const char *target, uint8_t b0, uint8_t b1, int nhead, const void *d, size_t n) {
    uint8_t h[2] = {b0, b1};
    put(target, h, (size_t)nhead, d, n);
}

/* ---- gguf ---- */
static void gguf_prefixes(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".gguf") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        static char buf[64 << 10];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        put("gguf", buf, n < 4096 ? n : 4096, NULL, 0);
        if (n > 4096) put("gguf", buf, n, NULL, 0);
    }
    closedir(d);
}

static void gguf_seeds(const char *shared) {
    static const struct { enum e0_arch a; int moe, tied; } m[] = {
        {E0_ARCH_LLAMA, 0, 0}, {E0_ARCH_LLAMA, 1, 0}, {E0_ARCH_LLAMA, 0, 1}, {E0_ARCH_QWEN2, 0, 0},
        {E0_ARCH_QWEN3, 0, 0}, {E0_ARCH_QWEN2MOE, 1, 0}, {E0_ARCH_QWEN3MOE, 1, 0},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/tmp-synth.gguf", out_dir);
        e0_err e = {{0}};
        size_t len;
        char *data = NULL;
        if (fuzz_synth_tiny(m[i].a, m[i].moe, m[i].tied, path, &e) == 0) data = fuzz_read_file(path, 16u << 20, &len);
        unlink(path);
        if (!data) {
            fprintf(stderr, "fuzz_seeds: synth: %s\n", e.msg);
            exit(1);
        }
        put("gguf", data, len, NULL, 0);
        free(data);
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/golden", shared);
    gguf_prefixes(dir);
    snprintf(dir, sizeof dir, "%s/tokenizer", shared);
    gguf_prefixes(dir);
}

/* ---- tokenizer ---- */
typedef struct cases {
    char *buf;
    const char *p[512];
    size_t len[512], n;
} cases;

/* X.inp: "case SEP case SEP ... case SEP", SEP = "\n__ggml_vocab_test__\n". */
static int read_inp(const char *path, cases *c) {
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t len;
    c->n = 0;
    if (!(c->buf = fuzz_read_file(path, 16u << 20, &len))) return -1;
    for (const char *p = c->buf, *end = c->buf + len; p < end && c->n < 512;) {
        const char *s = memmem(p, (size_t)(end - p), sep, sizeof sep - 1);
        if (!s) break;
        c->p[c->n] = p;
        c->len[c->n++] = (size_t)(s - p);
        p = s + sizeof sep - 1;
    }
    return 0;
}

/* X.out line -> 3-byte ids as fuzz_tokenizer's detokenize mode reads them (value = id + 4). */
static void out_seeds(const char *path, int vocab) {
    size_t len;
    char *buf = fuzz_read_file(path, 16u << 20, &len);
    if (!buf) return;
    uint8_t *ids = malloc(len * 3 + 3);
    for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = 0;
        size_t k = 0;
        for (char *p = line, *end;; p = end) {
            long id = strtol(p, &end, 10);
            if (end == p) break;
            uint32_t v = (uint32_t)id + 4;
            ids[k++] = (uint8_t)v, ids[k++] = (uint8_t)(v >> 8), ids[k++] = (uint8_t)(v >> 16);
        }
        put2("tokenizer", (uint8_t)(vocab | 0x80), 0, 1, ids, k);
        put2("tokenizer", (uint8_t)(vocab | 0x90), 0, 1, ids, k); /* special pieces */
    }
    free(ids);
    free(buf);
}

static void tokenizer_seeds(const char *shared) {
    static const char text[] = "Hello world! <|im_start|>user\n123 4567 \xe2\x96\x81 caf\xc3\xa9 \xff";
    for (int i = 0; i < FUZZ_N_VOCABS; i++) {
        const fuzz_vocab *v = fuzz_vocab_at(i);
        put2("tokenizer", (uint8_t)i, 0, 1, text, sizeof text - 1);
        put2("tokenizer", (uint8_t)(i | 0x30), 0, 1, text, sizeof text - 1); /* special tokens */
        put2("tokenizer", (uint8_t)(i | 0x40), 0, 1, text, sizeof text - 1); /* prompt */
        char path[4096];
        cases c;
        const char *file = v->file ? v->file : "tokenizer/ggml-vocab-gpt-2.gguf";
        snprintf(path, sizeof path, "%s/%s.inp", shared, file);
        if (read_inp(path, &c) == 0) {
            for (size_t k = 0; k < c.n; k++) put2("tokenizer", (uint8_t)(i | (k % 4 == 3 ? 0x40 : 0)), 0, 1, c.p[k], c.len[k]);
            free(c.buf);
        }
        if (v->file && !v->pre) {
            snprintf(path, sizeof path, "%s/%s.out", shared, file);
            out_seeds(path, i);
            snprintf(path, sizeof path, "%s/%.*s.extended.inp", shared, (int)(strlen(file) - 5), file);
            if (read_inp(path, &c) == 0) {
                /* the extended cases are the same text for every vocabulary: spread them */
                for (size_t k = (size_t)i; k < c.n; k += 5) put2("tokenizer", (uint8_t)(k % FUZZ_N_VOCABS), 0, 1, c.p[k], c.len[k]);
                free(c.buf);
            }
        }
    }
}

/* ---- jinja and messages ---- */
static void template_seeds(const char *shared) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/templates", shared);
    size_t n;
    char **names = fuzz_list_templates(dir, &n);
    for (size_t i = 0; i < n; i++) {
        char path[8192];
        size_t tlen;
        snprintf(path, sizeof path, "%s/%s.jinja", dir, names[i]);
        char *tmpl = fuzz_read_file(path, 4u << 20, &tlen);
        snprintf(path, sizeof path, "%s/%s.cases.json", dir, names[i]);
        json_t *file = json_load_file(path, 0, NULL);
        json_t *cs = json_object_get(file, "cases");
        for (size_t k = 0; tmpl && k < json_array_size(cs); k++) {
            json_t *c = json_array_get(cs, k), *msgs = json_object_get(c, "messages");
            json_t *vars = json_pack("{s:O,s:O,s:O,s:O}", "messages", msgs, "add_generation_prompt",
                                     json_object_get(c, "add_generation_prompt"), "bos_token",
                                     json_object_get(c, "bos_token"), "eos_token", json_object_get(c, "eos_token"));
            char *js = vars ? json_dumps(vars, JSON_COMPACT) : NULL;
            char *jm = json_dumps(msgs, JSON_COMPACT);
            if (js) {
                char *buf = malloc(tlen + 1 + strlen(js));
                memcpy(buf, tmpl, tlen);
                buf[tlen] = 0;
                memcpy(buf + tlen + 1, js, strlen(js));
                put("jinja", buf, tlen + 1 + strlen(js), NULL, 0);
                free(buf);
            }
            int gen = json_is_true(json_object_get(c, "add_generation_prompt"));
            if (jm) put2("messages", (uint8_t)i, (uint8_t)gen, 2, jm, strlen(jm));
            /* text mode: the last message's content as user text, the first as system */
            size_t nm = json_array_size(msgs);
            const char *first = json_string_value(json_object_get(json_array_get(msgs, 0), "content"));
            const char *last = json_string_value(json_object_get(json_array_get(msgs, nm ? nm - 1 : 0), "content"));
            if (k == 0 && last && first) {
                char *t = malloc(strlen(first) + strlen(last) + 2);
                sprintf(t, "%s\n%s", first, last);
                put2("messages", (uint8_t)i, (uint8_t)(gen | 2 | (nm > 1 ? 4 : 0)), 2, t, strlen(t));
                free(t);
            }
            free(js);
            free(jm);
            json_decref(vars);
        }
        json_decref(file);
        free(tmpl);
    }
    fuzz_free_list(names, n);
    static const char t[] = "{% for m in messages %}{{ m.role|upper }}: {{ m['content'] | trim }}\n{% endfor %}";
    static const char j[] = "{\"messages\": [{\"role\": \"user\", \"content\": \" hi \"}], \"x\": [1, 2.5, null, true]}";
    put("jinja", t, sizeof t, j, sizeof j - 1); /* sizeof t: the NUL separator included */
    static const char m[] = "[{\"role\": \"user\", \"content\": \"hello\"}]";
    put2("messages", 0, 1, 2, m, sizeof m - 1);
}

/* ---- serve ---- */
static void serve_body(int mode, const char *body) { put2("serve", (uint8_t)mode, 0, 1, body, strlen(body)); }

static void serve_seeds(const char *shared) {
    static const struct { int mode; const char *body; } b[] = {
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true,"
            "\"return_tokens\":true}"},
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":3,\"temperature\":0,\"logprobs\":true,"
            "\"top_logprobs\":3}"},
        {0, "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
            "\"text\":\"caf\\u00e9 \\ud83d\\ude00\"}]}],\"stream\":true,\"stream_options\":{\"include_usage\":true},\"stop\":[\"\\n\",\"zz\"],"
            "\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,\"seed\":7,\"presence_penalty\":0.5,\"frequency_penalty\":-0.5,"
            "\"repeat_penalty\":1.1,\"repeat_last_n\":-1,\"max_completion_tokens\":5}"},
        {0, "{\"messages\":[{\"role\":\"developer\",\"content\":null},{\"role\":\"assistant\",\"content\":\"x\","
            "\"tool_calls\":[]},{\"role\":\"tool\",\"content\":\"1\",\"tool_call_id\":\"a\"}],\"tools\":[],\"n\":1}"},
        {0, "{\"messages\":\"hi\"}"},
        {0, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}"},
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"hot\"}"},
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1e400}"},
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":99999999999999999999999}"},
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2}"},
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}"},
        {1, "{\"prompt\":[5,17,42,99,7],\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true,\"return_tokens\":true}"},
        {1, "{\"prompt\":\"Once upon a time\",\"max_tokens\":24,\"temperature\":0,\"ignore_eos\":true,\"stop\":[\"zzzz\",\"e u\"]}"},
        {1, "{\"prompt\":\"Once upon a time\",\"max_tokens\":24,\"temperature\":0,\"stop\":\"up\",\"stream\":true}"},
        {1, "{\"prompt\":[[5,6,7]],\"max_tokens\":4000,\"ignore_eos\":true,\"temperature\":0,\"logprobs\":2,\"n_predict\":-1}"},
        {1, "{\"prompt\":[\"Hi there\"],\"max_tokens\":7,\"temperature\":0,\"ignore_eos\":true,\"logprobs\":0}"},
        {1, "{\"prompt\":[1,2,999999]}"},
        {1, "{\"prompt\":\"x\",\"grammar\":\"root ::= \\\"{\\\" [a-z]{1,3} (\\\",\\\" | [^x])* \\\"}\\\"\"}"},
        {0, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
            "{\"name\":\"p\",\"schema\":{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":[\"integer\",\"null\"]},"
            "\"k\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"},\"maxItems\":2}},\"required\":[\"v\"]}},"
            "\"anyOf\":[{\"$ref\":\"#/$defs/n\"},{\"enum\":[1,\"a\"]},{\"type\":\"string\",\"format\":\"date\",\"title\":\"t\"}]}}}}"},
        {1, "{\"prompt\":\"x\",\"json_schema\":{\"properties\":{\"a\":{\"const\":[1]}},\"additionalProperties\":{\"minLength\":2,"
            "\"maxLength\":3,\"type\":\"string\"}}}"},
        {1, "{\"prompt\":\"x\",\"json_schema\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\","
            "\"pattern\":\"^(?:[A-Z]{2}|x\\\\d+)-[^\\\"\\\\\\\\]{1,3}$|\\\\w\\\\s?\\\\.\\u00e9\"}},\"required\":[\"id\"]}}"},
        {1, "{\"prompt\":\"x\",\"stop\":[1]}"},
        {1, "{\"prompt\":\"<|im_start|>user<|im_end|>\",\"stop\":[\"\",\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\","
            "\"k\",\"l\",\"m\",\"n\",\"o\",\"p\"]}"},
        {2, "{\"content\":\"Hello world\"}"},
        {2, "{\"content\":\"<|im_start|>Hello \\u00e9\",\"add_special\":true,\"parse_special\":false,\"with_pieces\":true}"},
        {2, "{\"content\":1}"},
        {3, "{\"tokens\":[72,101,108,108,111]}"},
        {3, "{\"tokens\":[-1]}"},
        {3, "{\"tokens\":[599,0,300,2.5]}"},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) serve_body(b[i].mode, b[i].body);
    /* stop strings (fuzz_serve.c mode 4): 3 stop strings, then pieces that complete one across pieces */
    static const char st[] = "\x04\x02</s>\0\n\nUser:\0ab\0\x05Hello\x03 </\x01s\x05>tail\x02\n\n\x05User:";
    put("serve", st, sizeof st - 1, NULL, 0);
    static const char st2[] = "\x04\x00\xe2\x80\x9c\0\x02\xe2\x80\x01\x9c\x00\x03" "abc";
    put("serve", st2, sizeof st2 - 1, NULL, 0);
    /* every template case's messages as a chat request */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/templates", shared);
    size_t n;
    char **names = fuzz_list_templates(dir, &n);
    for (size_t i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s.cases.json", dir, names[i]);
        json_t *file = json_load_file(path, 0, NULL);
        json_t *cs = json_object_get(file, "cases");
        for (size_t k = 0; k < json_array_size(cs); k++) {
            json_t *req = json_pack("{s:O,s:i,s:f}", "messages", json_object_get(json_array_get(cs, k), "messages"), "max_tokens",
                                    16, "temperature", 0.0);
            char *js = req ? json_dumps(req, JSON_COMPACT) : NULL;
            if (js) serve_body(0, js);
            free(js);
            json_decref(req);
        }
        json_decref(file);
    }
    fuzz_free_list(names, n);
}

/* ---- trace ---- */

/* The first n_lines lines of a file (whole lines, so the prefix is a valid trace when the file is). */
static void trace_prefix(const char *path, int n_lines) {
    size_t len;
    char *data = fuzz_read_file(path, 256u << 20, &len);
    if (!data) return;
    size_t end = 0;
    for (int l = 0; l < n_lines && end < len; l++) {
        const char *nl = memchr(data + end, '\n', len - end);
        end = nl ? (size_t)(nl - data) + 1 : len;
    }
    put("trace", data, end, NULL, 0);
    free(data);
}

static void trace_seeds(const char *shared) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/routing", shared);
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l <= 4 || strcmp(de->d_name + l - 4, ".csv") != 0) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        trace_prefix(path, 12);
        trace_prefix(path, 120);
    }
    if (d) closedir(d);
    static const char t[] = "# E=8 k=2; hand-made\nseq,token,phase,layer,experts,weights\n"
                            "0,0,0,0,3;1,0.75;0.25\n0,0,0,2,7;0,0.5;0.5\n0,1,1,0,2;3,1;0\n1,0,,2,5;6,0.6;0.4\n";
    put("trace", t, sizeof t - 1, NULL, 0);
}

/* ---- grammar ---- */
static void grammar_seeds(void) {
    static const struct { const char *g, *text; } c[] = {
        {NULL, "\x03{\"a\"\x01: [1,\x02 -2.5e3, \"x\\u00e9\"]}"},
        {"root ::= \"[\" root \"]\" | [a-z]+ (\",\" [0-9]{1,3})?", "\x02[[ab\x03,12]]"},
        {"root ::= (\"yes\" | \"no\") \"!\"? # answer\nws ::= [ \\t\\n]*", "\x02yes!"},
        {"root ::= [^\\x00-\\x1F\"]* . [\\u00e9-\\U0001F600]", "\x01\xc3\xa9\x03\xf0\x9f\x98\x80"},
        {"root ::= a b{2,} c?\na ::= \"x\"*\nb ::= [0-9]\nc ::= \"\" | \"z\"", "\x03xx12\x043z"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        const char *g = c[i].g ? c[i].g : e0_grammar_json;
        put("grammar", g, strlen(g) + 1, c[i].text, strlen(c[i].text)); /* the grammar's NUL separates the text */
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SHARED OUTDIR\n", argv[0]);
        return 2;
    }
    out_dir = argv[2];
    static const char *targets[] = {"", "/gguf", "/tokenizer", "/jinja", "/messages", "/trace", "/serve", "/grammar"};
    for (int i = 0; i < 8; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s%s", out_dir, targets[i]);
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            perror(p);
            return 1;
        }
    }
    gguf_seeds(argv[1]);
    tokenizer_seeds(argv[1]);
    template_seeds(argv[1]);
    trace_seeds(argv[1]);
    serve_seeds(argv[1]);
    grammar_seeds();
    printf("fuzz_seeds: %d seed inputs in %s\n", n_written, out_dir);
    return 0;
}
