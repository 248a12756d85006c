/* test_cli.c — the command line's wrong or silent failures (issue 17), run on the built binaries:
 * write errors on stdout (a full disk) exit 1 with one message, a reader that goes away (`| head`)
 * is a quiet normal end, token id lists take commas and/or spaces (and stdin in detokenize),
 * unknown flags are called unknown, `logits --out -` is stdout, an over-long chat message is
 * refused without ending the conversation, memory sizes in messages are readable, and
 * predict_from_layer is checked against the model. Models: ../shared/golden and one `synth`
 * model with a chat template, written into the build folder. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/options.h"
#include "t.h"

static char dir[1024], bin[1024], bench_bin[1024], dense[1024], moe[1024], chat_model[1024];

/* Run the shell command made from fmt; its stdout into out (may be NULL), its stderr into err
 * (may be NULL). Returns its exit status (-1 if it did not exit). */
static int sh(char *out, size_t out_cap, char *err, size_t err_cap, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int sh(char *out, size_t out_cap, char *err, size_t err_cap, const char *fmt, ...) {
    static char cmd[1 << 17], full[(1 << 17) + 2048];
    char err_path[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    snprintf(full, sizeof full, "( %s ) 2>'%s'", cmd, err_path);
    int rc = t_sh(full, out, out ? out_cap : 0);
    if (err) {
        err[0] = 0;
        FILE *f = fopen(err_path, "r");
        if (f) {
            size_t n = fread(err, 1, err_cap - 1, f);
            err[n] = 0;
            fclose(f);
        }
    }
    return rc;
}

/* Contents of dir/name (NUL-terminated, at most cap-1 bytes); "" if unreadable. */
static const char *slurp(const char *name, char *buf, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, cap - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    return buf;
}

/* Lines of s that start with prefix (the error messages of a program). */
static int count_lines(const char *s, const char *prefix) {
    int n = 0;
    for (const char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, prefix, strlen(prefix))) n++;
    return n;
}

/* The commands that write to stdout, each as a shell command (stdin prepared where needed). */
static int stdout_commands(char cmds[][4096], int max) {
    int n = 0;
#define ADD(...) (n < max ? snprintf(cmds[n++], sizeof cmds[0], __VA_ARGS__) : 0)
    ADD("%s run -m %s -p hi -n 50 --temp 0", bin, dense);
    ADD("printf 'hi\\nhow are you\\n' | %s chat -m %s -n 8 --temp 0", bin, chat_model);
    ADD("%s run -m %s --tokens 1,2,3 -n 20 --print-ids", bin, dense);
    ADD("%s info -m %s", bin, dense);
    ADD("%s bench -m %s --raw --user-file %s/prompt.txt --warmup 0 --ntok 2 --runs 2", bin, dense, dir);
    ADD("%s --help", bin);
    ADD("%s run --help", bin);
    ADD("echo 'Once upon a time' | %s tokenize -m %s", bin, dense);
    ADD("%s detokenize -m %s --ids '1 403 80'", bin, dense);
    ADD("cd '%s' && %s logits -m %s --tokens 1,2 --out -", dir, bin, dense); /* in dir: a broken one writes ./- */
    ADD("%s report render %s/report.json", bench_bin, dir);
    ADD("%s --help", bench_bin);
#undef ADD
    return n;
}

/* `> /dev/full`: every command exits 1 with exactly one message saying stdout failed. */
static void test_stdout_full(void) {
    if (access("/dev/full", W_OK) != 0) {
        printf("# skipped: no /dev/full\n");
        return;
    }
    static char cmds[16][4096];
    char err[8192];
    int n = stdout_commands(cmds, 16);
    for (int i = 0; i < n; i++) {
        int rc = sh(NULL, 0, err, sizeof err, "%s > /dev/full", cmds[i]);
        int messages = count_lines(err, "edge0-infer:") + count_lines(err, "edge0-bench:");
        CHECKF(rc == 1 && messages == 1 && strstr(err, "cannot write to stdout"), "%s: rc %d, stderr: %s", cmds[i], rc, err);
    }
}

/* `| true` (a reader that is gone before anything is written): exit 0, no error message, and a
 * generation loop stops instead of running on. */
static void test_reader_gone(void) {
    static char cmds[16][4096], script[1 << 17];
    char buf[8192];
    int n = stdout_commands(cmds, 16);
    size_t len = (size_t)snprintf(script, sizeof script, "{ sleep 1; ");
    for (int i = 0; i < n; i++) /* 16 commands of < 4096 bytes fit */
        len += (size_t)snprintf(script + len, sizeof script - len, "%s 2>'%s/gone%d.err'; echo $? >'%s/gone%d.rc'; ", cmds[i], dir, i, dir, i);
    snprintf(script + len, sizeof script - len, "} | true");
    CHECK(sh(NULL, 0, NULL, 0, "%s", script) == 0);
    for (int i = 0; i < n; i++) {
        char name[64], rc[64];
        snprintf(name, sizeof name, "gone%d.rc", i);
        slurp(name, rc, sizeof rc);
        snprintf(name, sizeof name, "gone%d.err", i);
        slurp(name, buf, sizeof buf);
        int messages = count_lines(buf, "edge0-infer:") + count_lines(buf, "edge0-bench:");
        CHECKF(!strcmp(rc, "0\n") && messages == 0, "%s: exit status %s, stderr: %s", cmds[i], rc, buf);
    }
    /* run (the first command, -n 50) stopped at the first token it could not write */
    slurp("gone0.err", buf, sizeof buf);
    const char *g = strstr(buf, "generated ");
    CHECKF(g && atoi(g + 10) < 50, "run did not stop: %s", buf);
}

/* detokenize: ids separated by spaces and/or commas, from --ids or stdin; errors name the flag. */
static void test_id_lists(void) {
    char a[4096], b[4096], err[4096];
    CHECK(sh(a, sizeof a, NULL, 0, "%s detokenize -m %s --ids 1,403,80,137", bin, dense) == 0);
    CHECK(strlen(a) > 0);
    CHECK(sh(b, sizeof b, NULL, 0, "%s detokenize -m %s --ids '1 403 80 137'", bin, dense) == 0 && !strcmp(a, b));
    CHECK(sh(b, sizeof b, NULL, 0, "%s detokenize -m %s --ids ' 1, 403 ,80,  137 '", bin, dense) == 0 && !strcmp(a, b));
    CHECK(sh(b, sizeof b, NULL, 0, "echo '1 403 80 137' | %s detokenize -m %s", bin, dense) == 0 && !strcmp(a, b));
    /* tokenize's output goes straight back in */
    CHECK(sh(b, sizeof b, NULL, 0, "printf 'Once upon a time' | %s tokenize -m %s --no-bos | %s detokenize -m %s", bin, dense, bin, dense) == 0);
    CHECKF(!strcmp(b, "Once upon a time"), "round trip gave '%s'", b);
    /* run and logits take the same lists */
    CHECK(sh(a, sizeof a, NULL, 0, "%s run -m %s --tokens 1,403,80 -n 4 --temp 0 --print-ids", bin, dense) == 0);
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s --tokens '1 403 80' -n 4 --temp 0 --print-ids", bin, dense) == 0 && !strcmp(a, b));
    static const char *const bad[] = {"1 x", "1,,2", "1,", "-1", "99999999999", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = sh(NULL, 0, err, sizeof err, "%s detokenize -m %s --ids '%s'", bin, dense, bad[i]);
        CHECKF(rc == 1 && strstr(err, "--ids") && !strstr(err, "--tokens"), "--ids '%s': rc %d, %s", bad[i], rc, err);
    }
    int rc = sh(NULL, 0, err, sizeof err, "echo '1 two' | %s detokenize -m %s", bin, dense);
    CHECKF(rc == 1 && strstr(err, "stdin") && strstr(err, "'two'"), "rc %d, %s", rc, err);
    rc = sh(NULL, 0, err, sizeof err, "%s run -m %s --tokens '1;2' -n 2 --print-ids", bin, dense);
    CHECKF(rc == 1 && strstr(err, "--tokens"), "rc %d, %s", rc, err);
}

/* An unknown flag is unknown, also as the last argument (where it "needs a value" was said). */
static void test_unknown_last_flag(void) {
    static const char *const cmds[] = {"bench -m M", "run -m M -p hi", "chat -m M", "logits -m M --tokens 1", "info -m M",
                                       "tokenize -m M", "detokenize -m M", "apply-template", "synth", "membw", "diskbw -m M"};
    char err[4096];
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc = sh(NULL, 0, err, sizeof err, "%s %s --bogus </dev/null", bin, cmds[i]);
        CHECKF(rc == 1 && strstr(err, "unknown option") && strstr(err, "--bogus") && !strstr(err, "needs a value"),
               "%s --bogus: rc %d, %s", cmds[i], rc, err);
    }
    /* a known flag without its value still says so */
    int rc = sh(NULL, 0, err, sizeof err, "%s bench -m %s --ntok", bin, dense);
    CHECKF(rc == 1 && strstr(err, "--ntok needs a value"), "rc %d, %s", rc, err);
    /* serve --prefill-budget: a positive count, refused before anything loads */
    static const char *const bad[] = {"0", "-3", "x", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rc = sh(NULL, 0, err, sizeof err, "%s serve -m %s --port 0 --prefill-budget %s", bin, dense, bad[i]);
        CHECKF(rc == 1 && strstr(err, "--prefill-budget") && !strstr(err, "listening"), "--prefill-budget %s: rc %d, %s", bad[i], rc, err);
    }
}

/* `logits --out -` writes the floats to stdout, the same bytes as --out FILE, and no file `-`. */
static void test_logits_stdout(void) {
    char err[4096], info[8192];
    CHECK(sh(NULL, 0, err, sizeof err, "cd '%s' && rm -f ./- logits-stdout.bin logits-file.bin && '%s' logits -m '%s' --tokens 1,403,80 --out - > logits-stdout.bin",
             dir, bin, dense) == 0);
    CHECK(sh(NULL, 0, NULL, 0, "cd '%s' && '%s' logits -m '%s' --tokens 1,403,80 --out logits-file.bin", dir, bin, dense) == 0);
    CHECK(sh(NULL, 0, NULL, 0, "cd '%s' && cmp logits-stdout.bin logits-file.bin", dir) == 0);
    char minus[1200];
    snprintf(minus, sizeof minus, "%s/-", dir);
    CHECKF(access(minus, F_OK) != 0, "a file named '-' was written");
    CHECK(sh(info, sizeof info, NULL, 0, "%s info -m %s", bin, dense) == 0);
    const char *v = strstr(info, "vocabulary:");
    struct stat st;
    char path[1200];
    snprintf(path, sizeof path, "%s/logits-stdout.bin", dir);
    CHECKF(v && stat(path, &st) == 0 && st.st_size == 3 * 4 * atoll(v + 11), "size %lld", (long long)st.st_size);
}

/* One chat message longer than the context: said so (not "context is full ... /reset"), the
 * conversation stays as it was (the next turn's prompt is that of a fresh conversation). */
static void test_chat_message_too_long(void) {
    char longmsg[2000] = "", out[8192], err[8192], fresh[8192];
    for (int i = 0; i < 100; i++) strcat(longmsg, "hello there ");
    int rc = sh(out, sizeof out, err, sizeof err, "printf '%%s\\nhi\\n' '%s' | %s chat -m %s -c 256 -n 4 --temp 0 --verbose", longmsg,
                bin, chat_model);
    CHECKF(rc == 0, "rc %d, %s", rc, err);
    CHECKF(strstr(err, "too long for the context") && strstr(err, "context 256") && !strstr(err, "/reset"), "%s", err);
    CHECKF(strlen(out) > 0, "no answer to the second message");
    CHECK(sh(NULL, 0, fresh, sizeof fresh, "printf 'hi\\n' | %s chat -m %s -c 256 -n 4 --temp 0 --verbose", bin, chat_model) == 0);
    const char *a = strstr(err, "[prompt "), *b = strstr(fresh, "[prompt ");
    CHECKF(a && b && atoi(a + 8) == atoi(b + 8), "second turn: %s; fresh: %s", a ? a : "none", b ? b : "none");
}

/* Sizes in the budget message show the difference; e0_size_text's forms. */
static void test_size_messages(void) {
    char buf[32];
    CHECK(!strcmp(e0_size_text(512, buf), "512 bytes"));
    CHECK(!strcmp(e0_size_text(8ull << 20, buf), "8.00 MiB"));
    CHECK(!strcmp(e0_size_text(10254295, buf), "9.78 MiB"));
    CHECK(!strcmp(e0_size_text(3ull << 29, buf), "1.50 GiB"));
    CHECK(!strcmp(e0_size_text(30ull << 30 | 1ull << 29, buf), "30.5 GiB"));
    CHECK(!strcmp(e0_size_text(300ull << 30, buf), "300 GiB"));
    char err[4096];
    int rc = sh(NULL, 0, err, sizeof err, "%s run -m %s -p hi -n 1 -c 4096 -ctk f32 -ctv f32 --model-option memory_budget=8MiB", bin,
                    moe); /* F32 KV: 8 MiB of it, more than the budget */
    const char *have = strstr(err, "memory budget "), *need = strstr(err, "needs at least ");
    CHECKF(rc == 1 && have && need, "rc %d, %s", rc, err);
    if (!have || !need) return;
    have += strlen("memory budget ");
    need += strlen("needs at least ");
    size_t hl = strcspn(have, "("), nl = strcspn(need, "(");
    CHECKF(!strncmp(have, "8.00 MiB ", hl), "%s", err);
    CHECKF(hl != nl || strncmp(have, need, hl) != 0, "the two sizes read the same: %s", err);
}

/* predict_from_layer must be a layer of the model: checked at load, naming the range. */
static void test_predict_from_layer(void) {
    char info[8192], err[4096], want[64];
    CHECK(sh(info, sizeof info, NULL, 0, "%s info -m %s", bin, moe) == 0);
    const char *l = strstr(info, "layers:");
    int n_layer = l ? atoi(l + 7) : 0;
    CHECK(n_layer >= 2);
    snprintf(want, sizeof want, "from 0 to %d", n_layer - 1);
    static const int bad_offsets[] = {0, 97};
    for (int k = 0; k < 2; k++) {
        int bad = n_layer + bad_offsets[k];
        int rc = sh(NULL, 0, err, sizeof err, "%s run -m %s -p hi -n 1 --model-option predict_from_layer=%d", bin, moe, bad);
        CHECKF(rc == 1 && strstr(err, "predict_from_layer") && strstr(err, want), "predict_from_layer=%d: rc %d, %s", bad, rc, err);
    }
    int rc = sh(NULL, 0, err, sizeof err, "%s run -m %s -p hi -n 1 --temp 0 --model-option predict_from_layer=%d", bin, moe, n_layer - 1);
    CHECKF(rc == 0, "predict_from_layer=%d: rc %d, %s", n_layer - 1, rc, err);
}

/* llama.cpp's flags: --version, -f/--file, -sys/--system-prompt, --chat-template-file, the
 * penalties, --mlock/--no-mmap, -ngl/-fa/--jinja, -v, documented --n-predict, --print-ids with a text
 * prompt, -cnv. */
static void test_llama_flags(void) {
    char out[8192], err[8192], a[8192], b[8192];
    CHECKF(sh(out, sizeof out, err, sizeof err, "%s --version", bin) == 0 && !strncmp(out, "edge0-infer ", 12) &&
               strstr(out, "commit"), "%s%s", out, err);
    CHECK(sh(out, sizeof out, NULL, 0, "%s run --help", bin) == 0 && strstr(out, "--n-predict") && strstr(out, "--presence-penalty") &&
          strstr(out, "--repeat-last-n") && strstr(out, "-sys") && strstr(out, "--mlock") && strstr(out, "-cnv"));
    /* -f reads the prompt from a file: the same ids as -p */
    CHECK(sh(a, sizeof a, err, sizeof err, "%s run -m %s -p 'Once upon a time' -n 6 --temp 0 --print-ids", bin, dense) == 0);
    CHECKF(strlen(a) > 2, "--print-ids with a text prompt: %s", err);
    CHECK(sh(b, sizeof b, NULL, 0, "printf 'Once upon a time' > %s/p.txt && %s run -m %s -f %s/p.txt -n 6 --temp 0 --print-ids", dir,
             bin, dense, dir) == 0 && !strcmp(a, b));
    /* the text's ids as --tokens give the same continuation */
    char ids[4096];
    CHECK(sh(ids, sizeof ids, NULL, 0, "printf 'Once upon a time' | %s tokenize -m %s", bin, dense) == 0);
    ids[strcspn(ids, "\n")] = 0;
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s --tokens '%s' -n 6 --temp 0 --print-ids", bin, dense, ids) == 0);
    CHECKF(!strcmp(a, b), "text %s vs ids %s", a, b);
    /* penalties change a greedy continuation (40 tokens: it repeats itself); a window of 0 turns them off */
    CHECK(sh(a, sizeof a, NULL, 0, "%s run -m %s -p 'Once upon a time' -n 40 --temp 0 --print-ids", bin, dense) == 0);
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s -p 'Once upon a time' -n 40 --temp 0 --print-ids --frequency-penalty 5", bin, dense) == 0);
    CHECKF(strcmp(a, b) != 0, "--frequency-penalty 5 changed nothing: %s", b);
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s -p 'Once upon a time' -n 40 --temp 0 --print-ids --presence-penalty 5", bin, dense) == 0);
    CHECKF(strcmp(a, b) != 0, "--presence-penalty 5 changed nothing: %s", b);
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s -p 'Once upon a time' -n 40 --temp 0 --print-ids --presence-penalty 5 --repeat-last-n 0",
             bin, dense) == 0 && !strcmp(a, b));
    /* -sys and --system-prompt are --system; --chat-template-file replaces the model's template */
    CHECK(sh(a, sizeof a, NULL, 0, "%s run -m %s -p hi --system 'be brief' -n 4 --temp 0 --print-ids", bin, chat_model) == 0);
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s -p hi -sys 'be brief' -n 4 --temp 0 --print-ids", bin, chat_model) == 0 && !strcmp(a, b));
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s -p hi --system-prompt 'be brief' -n 4 --temp 0 --print-ids", bin, chat_model) == 0 &&
          !strcmp(a, b));
    CHECK(sh(b, sizeof b, err, sizeof err, "%s run -m %s -p hi --system 'be brief' -n 4 --temp 0 --print-ids --chat-template-file "
             "%.900s/templates/Qwen-Qwen2.5-7B-Instruct.jinja", bin, chat_model, t_shared()) == 0);
    CHECKF(!strcmp(a, b), "the model's own template from a file gave %s, not %s (%s)", b, a, err);
    CHECK(sh(NULL, 0, err, sizeof err, "printf '{{ messages[0].content }}!' > %s/t.jinja && %s run -m %s -p hi -n 1 --temp 0 -v "
             "--chat-template-file %s/t.jinja", dir, bin, dense, dir) == 0);
    CHECKF(strstr(err, "prompt: ") && strstr(err, "chat template applied") && strstr(err, "config: {"), "%s", err);
    /* --mlock, --no-mmap: accepted; --no-mmap says in one line that it changes nothing */
    CHECK(sh(NULL, 0, err, sizeof err, "%s run -m %s -p hi -n 2 --temp 0 --mlock --no-mmap", bin, dense) == 0);
    CHECKF(count_lines(err, "note: --no-mmap") == 1, "%s", err);
    /* -ngl, -fa, --jinja: taken with a note each; -fa's value is optional; -ngl's is checked */
    CHECK(sh(a, sizeof a, NULL, 0, "%s run -m %s -p hi -n 3 --temp 0 --print-ids", bin, dense) == 0);
    CHECK(sh(b, sizeof b, err, sizeof err, "%s run -m %s -p hi -ngl 99 -fa --temp 0 --jinja -n 3 --print-ids", bin, dense) == 0);
    CHECKF(!strcmp(a, b) && count_lines(err, "note: -ngl") == 1 && count_lines(err, "note: -fa") == 1 &&
               count_lines(err, "note: --jinja") == 1, "%s / %s: %s", a, b, err);
    CHECK(sh(b, sizeof b, err, sizeof err, "%s run -m %s -p hi --n-gpu-layers 0,99 -fa on --flash-attn 0,1 -n 3 --temp 0 --print-ids",
             bin, dense) == 0 && !strcmp(a, b));
    CHECK(sh(NULL, 0, err, sizeof err, "%s run -m %s -p hi -ngl many -n 1", bin, dense) == 1 && strstr(err, "not a layer count"));
    CHECK(sh(NULL, 0, err, sizeof err, "%s run -m %s -p hi -n 1 -ngl", bin, dense) == 1 && strstr(err, "needs a value"));
    /* -cnv / -i: a conversation (chat) */
    CHECK(sh(out, sizeof out, err, sizeof err, "printf 'hi\\n' | %s run -m %s -cnv -n 3 --temp 0", bin, chat_model) == 0);
    CHECKF(strstr(err, "starting a conversation") && strlen(out) > 0, "%s", err);
    CHECK(sh(out, sizeof out, err, sizeof err, "printf 'hi\\n' | %s run -m %s -i -p 'be brief' -n 3 --temp 0", bin, chat_model) == 0);
    /* chat takes run's sampling and stop flags (one parser): a greedy reply equals run's */
    char chat_out[4096], run_out[4096];
    CHECK(sh(chat_out, sizeof chat_out, err, sizeof err,
             "printf 'hi\\n' | %s chat -m %s -n 6 --temp 0 --top-k 5 --presence-penalty 0.5 --frequency-penalty 0.1 "
             "--repeat-last-n 16 --ignore-eos --stop QQQ -sys 'be brief' -s 3", bin, chat_model) == 0);
    CHECK(sh(run_out, sizeof run_out, NULL, 0,
             "%s run -m %s -p hi -n 6 --temp 0 --top-k 5 --presence-penalty 0.5 --frequency-penalty 0.1 "
             "--repeat-last-n 16 --ignore-eos --stop QQQ -sys 'be brief' -s 3", bin, chat_model) == 0);
    CHECKF(strlen(chat_out) > 0 && strstr(chat_out, run_out), "chat '%s' vs run '%s' (%s)", chat_out, run_out, err);
}

/* -l/--logit-bias, llama.cpp's TOKEN_ID(+/-)BIAS: +100 forces a token, -inf bans one, in run, chat
 * and as serve's default; malformed values and ids outside the vocabulary are one error, exit 1. */
static void test_logit_bias(void) {
    char a[4096], b[4096], err[4096];
    CHECK(sh(a, sizeof a, NULL, 0, "%s run -m %s --tokens 1,2,3 -n 8 --temp 0 --print-ids", bin, dense) == 0);
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s --tokens 1,2,3 -n 8 --temp 0 --print-ids -l 77+100", bin, dense) == 0);
    CHECKF(!strcmp(b, "77 77 77 77 77 77 77 77\n"), "%s", b);
    int first = atoi(a);
    CHECK(sh(b, sizeof b, NULL, 0, "%s run -m %s --tokens 1,2,3 -n 8 --temp 0.7 -s 4 --print-ids --logit-bias %d-inf", bin, dense,
             first) == 0);
    bool never = strlen(b) > 2;
    for (const char *p = b; *p; p += strcspn(p, " \n"), p += strspn(p, " \n")) never &= atoi(p) != first;
    CHECKF(never, "%d-inf: %s", first, b);
    CHECK(sh(b, sizeof b, NULL, 0, "printf 'hi\\n' | %s chat -m %s -n 4 --temp 0 -l 77+100", bin, chat_model) == 0);
    char piece[256];
    CHECK(sh(piece, sizeof piece, NULL, 0, "%s detokenize -m %s --ids 77,77,77,77", bin, chat_model) == 0);
    CHECKF(piece[0] && strstr(b, piece), "chat -l 77+100: '%s' lacks '%s'", b, piece);
    static const char *const bad[][2] = {{"77", "not TOKEN_ID+BIAS"}, {"x+1", "not TOKEN_ID+BIAS"}, {"77*2", "not TOKEN_ID+BIAS"},
                                         {"77+101", "out of range"},   {"77+inf", "not a number"},   {"99999+1", "vocabulary"}};
    for (int i = 0; i < 6; i++) {
        int rc = sh(NULL, 0, err, sizeof err, "%s run -m %s --tokens 1 -n 2 -l %s", bin, dense, bad[i][0]);
        CHECKF(rc == 1 && count_lines(err, "edge0-infer: ") == 1 && strstr(err, bad[i][1]), "-l %s: rc %d, %s", bad[i][0], rc, err);
    }
    CHECK(sh(NULL, 0, err, sizeof err, "%s serve -m %s --port 0 -l 99999+1", bin, dense) == 1 && strstr(err, "vocabulary"));
}

/* --grammar / --grammar-file / -j / -jf (llama.cpp's flags): run's and chat's output matches the
 * grammar (or is JSON valid for the schema) and stops when it is complete; bad grammars and
 * schemas, two of the flags, a missing file and id mode are one error each. */
static void test_grammar_flag(void) {
    char out[4096], err[4096], gfile[PATH_MAX];
    static const char g[] = "root ::= \"{\\\"n\\\": \" [1-9] [0-9]{0,2} \"}\"";
    for (int seed = 1; seed <= 3; seed++) {
        CHECK(sh(out, sizeof out, NULL, 0, "%s run -m %s -p x -n 40 --temp 1 -s %d --grammar '%s'", bin, chat_model, seed, g) == 0);
        json_t *v = json_loads(out, 0, NULL);
        json_int_t n = json_integer_value(json_object_get(v, "n"));
        CHECKF(v && n >= 1 && n <= 999 && !strncmp(out, "{\"n\": ", 6), "seed %d: '%s'", seed, out);
        json_decref(v);
    }
    snprintf(gfile, sizeof gfile, "%s/yesno.gbnf", dir);
    FILE *f = fopen(gfile, "w");
    if (f) fputs("# a comment\nroot ::= answer \"!\"\nanswer ::= \"yes\" | \"no\"\n", f), fclose(f);
    CHECK(sh(out, sizeof out, NULL, 0, "%s run -m %s -p x -n 40 --temp 0.8 -s 2 --grammar-file %s", bin, chat_model, gfile) == 0);
    CHECKF(!strcmp(out, "yes!") || !strcmp(out, "no!"), "'%s'", out);
    CHECK(sh(out, sizeof out, NULL, 0, "printf 'a\\nb\\n' | %s chat -m %s -n 40 --temp 0.8 -s 2 --grammar-file %s", bin, chat_model,
             gfile) == 0);
    int answers = 0;
    for (const char *p = out; (p = strstr(p, "!")); p++) answers += (p - out >= 3 && !strncmp(p - 3, "yes", 3)) || (p - out >= 2 && !strncmp(p - 2, "no", 2));
    CHECKF(answers == 2, "chat: '%s'", out);
    /* -j / -jf: JSON valid for the schema */
    static const char schema[] = "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},\"n\":{\"enum\":[1,2,3]}},"
                                 "\"required\":[\"ok\",\"n\"],\"additionalProperties\":false}";
    char sfile[PATH_MAX];
    snprintf(sfile, sizeof sfile, "%s/schema.json", dir);
    if ((f = fopen(sfile, "w"))) fputs(schema, f), fclose(f);
    /* the third run pushes '}' up by 100, so it closes the object as soon as the schema allows:
     * it must still hold both required keys */
    char close_id[64] = "";
    CHECK(sh(close_id, sizeof close_id, NULL, 0, "printf '}' | %s tokenize -m %s --no-bos", bin, chat_model) == 0 && atoi(close_id) > 0);
    for (int i = 0; i < 3; i++) {
        if (i == 0) CHECK(sh(out, sizeof out, NULL, 0, "%s run -m %s -p x -n 100 --temp 1 -s 5 -j '%s'", bin, chat_model, schema) == 0);
        else if (i == 1) CHECK(sh(out, sizeof out, NULL, 0, "%s run -m %s -p x -n 100 --temp 1 -s 6 --json-schema-file %s", bin, chat_model, sfile) == 0);
        else CHECK(sh(out, sizeof out, NULL, 0, "%s run -m %s -p x -n 100 --temp 1 -s 7 -l %d+100 -j '%s'", bin, chat_model, atoi(close_id), schema) == 0);
        json_t *v = json_loads(out, 0, NULL);
        json_int_t n = json_integer_value(json_object_get(v, "n"));
        CHECKF(json_object_size(v) == 2 && json_is_boolean(json_object_get(v, "ok")) && n >= 1 && n <= 3, "'%s'", out);
        json_decref(v);
    }
    static const char *const bad[][2] = {
        {"-j '{\"type\":\"string\",\"multipleOf\":2}'", "--json-schema: json schema: at the root: this keyword is not supported: multipleOf"},
        {"-j '{\"type\":\"string\",\"pattern\":\"(?!a)\"}'", "--json-schema: json schema: at the root: pattern: lookahead and lookbehind"},
        {"-j '{bad'", "--json-schema: not JSON"},
        {"-jf /nonexistent/s.json", "/nonexistent/s.json"},
        {"-j '{}' --grammar 'root ::= \"a\"'", "give one of"},
        {"--grammar 'root ::= \"yes'", "--grammar: line 1, column 14: unterminated literal"},
        {"--grammar 'root ::= a'", "undefined rule 'a'"},
        {"--grammar 'x ::= \"y\"'", "no rule named 'root'"},
        {"--grammar 'root ::= \"a\"' --grammar-file /dev/null", "give one of"},
        {"--grammar-file /nonexistent/g.gbnf", "/nonexistent/g.gbnf"},
        {"--grammar 'root ::= \"a\"' --print-ids", "not --tokens / --print-ids"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = sh(NULL, 0, err, sizeof err, "%s run -m %s -p x -n 4 %s", bin, chat_model, bad[i][0]);
        CHECKF(rc == 1 && count_lines(err, "edge0-infer: ") == 1 && strstr(err, bad[i][1]), "%s: rc %d, %s", bad[i][0], rc, err);
    }
}

/* info: name, tokenizer, BOS/EOS, chat template, and residency at the budget (as run decides). */
static void test_info_more(void) {
    char out[8192];
    CHECK(sh(out, sizeof out, NULL, 0, "%s info -m %s", bin, moe) == 0);
    CHECKF(strstr(out, "name:            golden-qwen3moe") && strstr(out, "tokenizer:       llama") &&
               strstr(out, "pre-tokenizer:") && strstr(out, "BOS:             1 \"<s>\"") && strstr(out, "EOS:             2") &&
               strstr(out, "chat template:   none") && strstr(out, "experts here:    resident"), "%s", out);
    CHECK(sh(out, sizeof out, NULL, 0, "%s info -m %s --model-option memory_budget=8MiB", bin, moe) == 0);
    const char *x = strstr(out, "experts here:    streamed from disk, ");
    CHECKF(x && atoi(x + strlen("experts here:    streamed from disk, ")) >= 1, "%s", out);
    /* the same slots run reports */
    char err[8192];
    CHECK(sh(NULL, 0, err, sizeof err, "%s run -m %s -p hi -n 1 --temp 0 --model-option memory_budget=8MiB", bin, moe) == 0);
    const char *y = strstr(err, "experts streamed (");
    CHECKF(x && y && atoi(x + strlen("experts here:    streamed from disk, ")) == atoi(y + strlen("experts streamed (")), "%s / %s", out, err);
    CHECK(sh(out, sizeof out, NULL, 0, "%s info -m %s", bin, chat_model) == 0 && strstr(out, "chat template:   yes"));
}

/* bench: --prompt-text is text, --prompt-fixture (and --prompt, as before) names a fixture. */
static void test_bench_prompts(void) {
    char out[16384], err[4096];
    CHECK(sh(out, sizeof out, err, sizeof err, "%s bench -m %s --raw --prompt-text 'Once upon a time' --warmup 0 --ntok 2", bin, dense) == 0);
    CHECKF(strstr(out, "\"prompt_file\":\"(--prompt-text)\""), "%s %s", out, err);
    CHECK(sh(out, sizeof out, NULL, 0, "%s bench -m %s --prompt-fixture short --warmup 0 --ntok 2", bin, dense) == 0 &&
          strstr(out, "short-story-prompt.txt"));
    CHECK(sh(out, sizeof out, NULL, 0, "%s bench -m %s --prompt short --warmup 0 --ntok 2", bin, dense) == 0 &&
          strstr(out, "short-story-prompt.txt"));
    int rc = sh(NULL, 0, err, sizeof err, "%s bench -m %s --prompt 'hello there'", bin, dense);
    CHECKF(rc == 1 && strstr(err, "--prompt-text"), "%s", err);
}

/* bench --breakdown splits the prefill too: each part's seconds, none negative, the parts within
 * the whole (timing is on for the prompt as for the steps), the experts' part non-zero on a MoE. */
static void test_bench_breakdown(void) {
    char out[16384], err[4096];
    CHECK(sh(out, sizeof out, err, sizeof err, "%s bench -m %s --prompt short --warmup 0 --ntok 2 --breakdown", bin, moe) == 0);
    json_t *row = json_loads(out, 0, NULL), *pb = json_object_get(row, "prefill_breakdown");
    CHECKF(json_is_object(pb) && json_is_object(json_object_get(row, "breakdown")), "%s %s", out, err);
    double parts = 0, total = json_number_value(json_object_get(pb, "total_seconds"));
    const char *key;
    json_t *v;
    json_object_foreach(pb, key, v) {
        CHECKF(json_is_number(v) && json_number_value(v) >= 0, "%s", key);
        if (strcmp(key, "total_seconds") && strcmp(key, "other_seconds") && strcmp(key, "expert_wait_seconds")) parts += json_number_value(v);
    }
    CHECKF(total > 0 && parts <= total * 1.0001 && json_number_value(json_object_get(pb, "expert_compute_seconds")) > 0 &&
               fabs(total - json_number_value(json_object_get(row, "prefill_seconds"))) < 1e-9,
           "%s", out);
    json_decref(row);
    /* streamed: the wait for reads is part of the experts' seconds */
    CHECK(sh(out, sizeof out, err, sizeof err, "%s bench -m %s --prompt short --warmup 0 --ntok 2 --breakdown --model-option memory_budget=8MiB",
             bin, moe) == 0);
    row = json_loads(out, 0, NULL);
    pb = json_object_get(row, "prefill_breakdown");
    const double wait = json_number_value(json_object_get(pb, "expert_wait_seconds"));
    CHECKF(wait > 0 && wait <= json_number_value(json_object_get(pb, "expert_compute_seconds")), "%s %s", out, err);
    json_decref(row);
    /* --batch-size 3: the batched prefill of the 3 prompts, split the same way */
    CHECK(sh(out, sizeof out, err, sizeof err, "%s bench -m %s --prompt short --warmup 0 --ntok 2 --breakdown --batch-size 3", bin, moe) == 0);
    row = json_loads(out, 0, NULL);
    pb = json_object_get(row, "prefill_breakdown");
    parts = 0, total = json_number_value(json_object_get(pb, "total_seconds"));
    json_object_foreach(pb, key, v)
        if (strcmp(key, "total_seconds") && strcmp(key, "other_seconds") && strcmp(key, "expert_wait_seconds")) parts += json_number_value(v);
    CHECKF(json_is_object(pb) && total > 0 && parts > 0.3 * total && parts <= total * 1.0001 &&
               json_number_value(json_object_get(pb, "attention_seconds")) > 0 &&
               json_number_value(json_object_get(pb, "expert_compute_seconds")) > 0 &&
               fabs(total - json_number_value(json_object_get(row, "prefill_seconds"))) < 1e-9,
           "%s %s", out, err);
    json_decref(row);
    /* without the flag, neither */
    CHECK(sh(out, sizeof out, NULL, 0, "%s bench -m %s --prompt short --warmup 0 --ntok 2", bin, moe) == 0 &&
          !strstr(out, "breakdown"));
    /* the experts computed per layer pass: one sequence's k; B copies of the prompt decode the same
     * ids, so the same k; distinct prompts (--batch-distinct) a larger union, and more bytes */
    static const char *const batch_flags[3] = {"", "--batch-size 3", "--batch-size 3 --batch-distinct"};
    double per_pass[3] = {0}, bytes[3] = {0};
    for (int k = 0; k < 3; k++) {
        CHECK(sh(out, sizeof out, err, sizeof err, "%s bench -m %s --prompt short --warmup 1 --ntok 3 --breakdown %s", bin,
                 moe, batch_flags[k]) == 0);
        row = json_loads(out, 0, NULL);
        json_t *b = json_object_get(row, "breakdown");
        per_pass[k] = json_number_value(json_object_get(b, "experts_per_moe_pass"));
        bytes[k] = json_number_value(json_object_get(b, "expert_bytes_per_token"));
        if (k == 1) CHECKF(json_is_true(json_object_get(row, "batch_sequences_agree")) &&
                               !strcmp(json_string_value(json_object_get(row, "batch_prompts")), "copies"), "%s", out);
        if (k == 2) CHECKF(json_is_null(json_object_get(row, "batch_sequences_agree")) &&
                               !strcmp(json_string_value(json_object_get(row, "batch_prompts")), "distinct"), "%s", out);
        if (k == 0) CHECKF(!json_object_get(row, "batch_prompts"), "%s", out);
        json_decref(row);
    }
    CHECKF(per_pass[0] >= 1 && per_pass[0] == floor(per_pass[0]) && per_pass[1] == per_pass[0] && per_pass[2] > per_pass[0] &&
               per_pass[2] <= 3 * per_pass[0] && bytes[0] > 0 && bytes[1] == bytes[0] && bytes[2] > bytes[0],
           "experts per pass %g %g %g, bytes %g %g %g", per_pass[0], per_pass[1], per_pass[2], bytes[0], bytes[1], bytes[2]);
    int rc = sh(NULL, 0, err, sizeof err, "%s bench -m %s --prompt short --batch-distinct", bin, moe);
    CHECKF(rc == 1 && strstr(err, "--batch-distinct needs --batch-size"), "%d %s", rc, err);
    /* fewer prompt tokens than sequences: some rotations repeat, and the run says how many */
    char ids[1100];
    snprintf(ids, sizeof ids, "%s/ids2.txt", dir);
    FILE *f = fopen(ids, "w");
    if (f) fputs("1 2\n", f), fclose(f);
    rc = sh(out, sizeof out, err, sizeof err, "%s bench -m %s --tokens-file %s --warmup 0 --ntok 2 --batch-size 3 --batch-distinct",
            bin, moe, ids);
    CHECKF(rc == 0 && strstr(err, "prompt of 2 tokens: 1 of the prompts repeat others"), "%d %s", rc, err);
}

/* bench without -c sizes the context to the run when it needs more than the default 4096 (up to
 * the model's trained length), and a run that cannot fit is one clear error before any work. */
static void test_bench_context(void) {
    char out[16384], err[4096];
    CHECK(sh(NULL, 0, err, sizeof err, "%s synth --arch qwen3moe --n-ctx 8192 --out %s/ctx8k.gguf", bin, dir) == 0);
    /* 4500 ids (the tiny vocabulary's 0 .. 99, repeated) + 3 steps: more than 4096 */
    CHECK(sh(NULL, 0, NULL, 0, "i=0; while [ $i -lt 4500 ]; do echo $((i %% 100 + 3)); i=$((i + 1)); done > %s/ids4500.txt", dir) == 0);
    CHECK(sh(out, sizeof out, err, sizeof err, "%s bench -m %s/ctx8k.gguf --tokens-file %s/ids4500.txt --warmup 1 --ntok 2", bin, dir, dir) == 0);
    const char *ctx = strstr(out, "\"context\":");
    CHECKF(strstr(out, "\"n_prompt\":4500") && ctx && atoi(ctx + strlen("\"context\":")) >= 4503, "%s %s", out, err);
    /* -c given: kept, so the run cannot fit: the error names the numbers */
    int rc = sh(NULL, 0, err, sizeof err, "%s bench -m %s/ctx8k.gguf --tokens-file %s/ids4500.txt --warmup 1 --ntok 2 -c 4096", bin, dir, dir);
    CHECKF(rc == 1 && count_lines(err, "edge0-infer:") == 1 && strstr(err, "4503 tokens of context") && strstr(err, "is 4096"), "%s", err);
    /* beyond the model's trained length (2048) */
    rc = sh(NULL, 0, err, sizeof err, "%s bench -m %s --tokens-file %s/ids4500.txt --warmup 1 --ntok 2", bin, moe, dir);
    CHECKF(rc == 1 && count_lines(err, "edge0-infer:") == 1 && strstr(err, "is 2048"), "%s", err);
}

/* apply-template: messages from stdin (-), template variables from --chat-template-kwargs. */
static void test_template_stdin_kwargs(void) {
    char a[8192], b[8192], err[4096];
    CHECK(sh(NULL, 0, NULL, 0, "printf '{%%%% if enable_thinking is false %%%%}no-think {%%%% endif %%%%}{{ messages[0].content }}' > %s/k.jinja"
             " && echo '[{\"role\":\"user\",\"content\":\"hi\"}]' > %s/m.json", dir, dir) == 0);
    CHECK(sh(a, sizeof a, err, sizeof err, "%s apply-template --chat-template-file %s/k.jinja --messages-file %s/m.json", bin, dir, dir) == 0);
    CHECKF(!strcmp(a, "hi"), "'%s' %s", a, err);
    CHECK(sh(b, sizeof b, err, sizeof err, "%s apply-template --chat-template-file %s/k.jinja --messages-file - < %s/m.json", bin, dir, dir) == 0);
    CHECKF(!strcmp(a, b), "stdin: '%s' %s", b, err);
    CHECK(sh(b, sizeof b, err, sizeof err, "%s apply-template --chat-template-file %s/k.jinja --messages-file - "
             "--chat-template-kwargs '{\"enable_thinking\":false}' < %s/m.json", bin, dir, dir) == 0);
    CHECKF(!strcmp(b, "no-think hi"), "kwargs: '%s' %s", b, err);
    int rc = sh(NULL, 0, err, sizeof err, "%s apply-template --chat-template-file %s/k.jinja --messages-file %s/m.json "
                "--chat-template-kwargs '[1]'", bin, dir, dir);
    CHECKF(rc == 1 && count_lines(err, "edge0-infer:") == 1 && strstr(err, "JSON object"), "%s", err);
}

int main(void) {
    /* absolute paths: some commands run in dir */
    char build[PATH_MAX], shared[PATH_MAX];
    if (!realpath(t_build(), build) || !realpath(t_shared(), shared)) {
        printf("FAIL setup: no %s or %s\n", t_build(), t_shared());
        return 1;
    }
    snprintf(dir, sizeof dir, "%.900s/test-cli", build);
    snprintf(bin, sizeof bin, "%.900s/bin/edge0-infer", build);
    snprintf(bench_bin, sizeof bench_bin, "%.900s/bin/edge0-bench", build);
    snprintf(dense, sizeof dense, "%.900s/golden/stories260K.gguf", shared);
    snprintf(moe, sizeof moe, "%.900s/golden/qwen3moe.gguf", shared);
    snprintf(chat_model, sizeof chat_model, "%.900s/chat.gguf", dir);
    mkdir(dir, 0755);
    /* the inputs: a chat model, a bench prompt, the smallest report that renders */
    static char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s synth --arch qwen3moe --out %s --seed 3 --chat-template-file %.900s/templates/Qwen-Qwen2.5-7B-Instruct.jinja >/dev/null"
             " && echo 'Once upon a time' > %s/prompt.txt"
             " && echo '{\"format\":\"edge0-bench-report/1\",\"protocol\":{},\"device\":{},\"identity\":{},\"configurations\":[]}'"
             " > %s/report.json",
             bin, chat_model, shared, dir, dir);
    if (t_sh(cmd, NULL, 0) != 0) {
        printf("FAIL setup: %s\n", cmd);
        return 1;
    }
    RUN(test_stdout_full);
    RUN(test_reader_gone);
    RUN(test_id_lists);
    RUN(test_unknown_last_flag);
    RUN(test_logits_stdout);
    RUN(test_chat_message_too_long);
    RUN(test_size_messages);
    RUN(test_predict_from_layer);
    RUN(test_llama_flags);
    RUN(test_logit_bias);
    RUN(test_grammar_flag);
    RUN(test_info_more);
    RUN(test_bench_prompts);
    RUN(test_bench_breakdown);
    RUN(test_bench_context);
    RUN(test_template_stdin_kwargs);
    return T_DONE();
}
