/* test_fuzz_regress.c — replays the inputs committed in tests/fuzz-regress/NAME/ (findings of the
 * libFuzzer targets in fuzz/, and a small input per target so each harness runs in every build)
 * through the same target code, compiled here with the ordinary compiler and, under `make asan`,
 * the sanitizers. A target's property checks (FUZZ_CHECK) become test checks; a crash fails the
 * binary. Input formats: the header comment of each fuzz/fuzz_NAME.c. To add a finding: copy
 * libFuzzer's crash file into tests/fuzz-regress/NAME/ under a name that says what it was. */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>

#include "t.h"

/* A failed FUZZ_CHECK: one failed test check (printed unless quiet). */
static bool fr_quiet;
static void fr_fail(const char *fmt, ...) {
    t_cur_failed++;
    if (fr_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    printf("  check failed: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}
#define FUZZ_NO_MAIN
#define FUZZ_FAIL(...) fr_fail(__VA_ARGS__)
#include "../fuzz/fuzz_gguf.c"
#include "../fuzz/fuzz_jinja.c"
#include "../fuzz/fuzz_messages.c"
#include "../fuzz/fuzz_tokenizer.c"
#include "../fuzz/fuzz_trace.c"
#include "../fuzz/fuzz_serve.c"
#include "../fuzz/fuzz_grammar.c"

/* Every file of tests/fuzz-regress/<name>, sorted; the number replayed. */
static int replay(const char *name, int (*one)(const uint8_t *, size_t)) {
    char dir[4096];
    const char *src = getenv("E0_SRC");
    snprintf(dir, sizeof dir, "%s/tests/fuzz-regress/%s", src ? src : ".", name);
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort), done = 0;
    CHECKF(n >= 0, "cannot list %s", dir);
    for (int i = 0; i < n; i++) {
        char path[8192];
        size_t len;
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        char *data = ents[i]->d_name[0] == '.' ? NULL : fuzz_read_file(path, 16u << 20, &len);
        if (data) {
            printf("  replay %s\n", path);
            fflush(stdout);
            one((const uint8_t *)data, len);
            free(data);
            done++;
        }
        free(ents[i]);
    }
    if (n > 0) free(ents);
    return done;
}

static void test_replay_gguf(void) {
    CHECK(fuzz_gguf_init() == 0);
    CHECK(replay("gguf", fuzz_gguf_one) > 0);
}
static void test_replay_tokenizer(void) {
    CHECK(fuzz_tokenizer_init() == 0);
    CHECK(replay("tokenizer", fuzz_tokenizer_one) > 0);
}
static void test_replay_jinja(void) {
    CHECK(fuzz_jinja_init() == 0);
    CHECK(replay("jinja", fuzz_jinja_one) > 0);
}
static void test_replay_trace(void) {
    CHECK(fuzz_trace_init() == 0);
    CHECK(replay("trace", fuzz_trace_one) > 0);
}
static void test_replay_serve(void) {
    CHECK(fuzz_serve_init() == 0);
    CHECK(replay("serve", fuzz_serve_one) > 0);
}
static void test_replay_grammar(void) {
    CHECK(fuzz_grammar_init() == 0);
    CHECK(replay("grammar", fuzz_grammar_one) > 0);
}
static void test_replay_messages(void) {
    CHECK(fuzz_messages_init() == 0);
    CHECK(replay("messages", fuzz_messages_one) > 0);
}

/* The harness's own checks must be able to fail: a streaming detokenizer output compared with
 * bytes it cannot produce is reported. */
static void test_checks_can_fail(void) {
    int before = t_cur_failed;
    const e0_tokenizer *t = tk_toks[tk_avail[0]];
    int32_t id = e0_tok_find(t, "a", 1);
    if (id < 0) id = 0;
    fr_quiet = true;
    tk_check_stream(t, &id, 1, false, "\x01\x02\x03", 3);
    fr_quiet = false;
    CHECK(t_cur_failed == before + 1);
    /* and a request failure reported as a server error (5xx) is one too */
    srv_fail f = {.status = 500, .type = "server_error", .msg = "x"};
    fr_quiet = true;
    fs_check_fail(&f, "test");
    fr_quiet = false;
    CHECK(t_cur_failed == before + 2);
    t_cur_failed = before;
}

int main(void) {
    RUN(test_replay_gguf);
    RUN(test_replay_tokenizer);
    RUN(test_replay_jinja);
    RUN(test_replay_messages);
    RUN(test_replay_trace);
    RUN(test_replay_grammar);
    RUN(test_replay_serve);
    RUN(test_checks_can_fail);
    return T_DONE();
}
