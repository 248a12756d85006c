/* test_serve_api.c — unit tests of serve's reply building (src/serve/output.c, api.c) that need
 * no server: tool calls parsed out of a generated reply (srv_parse_tool_calls) and the chat
 * response built from them (srv_response_json: message.tool_calls, finish_reason "tool_calls",
 * content null or the text before the calls), and replies left as text when they are not
 * content + complete, valid <tool_call> blocks. Streams: the same replies fed a few bytes at a
 * time through srv_toolsplit and srv_sse (the SSE lines serve sends) give the same content and
 * calls as the whole response, never a tag in delta.content, delta.tool_calls chunks and
 * finish_reason "tool_calls"; plain text still goes out in the chunk of the token that made it.
 * The SSE of a tool-call stream is written to build/test-serve-api/ for the `openai` package's
 * streaming helpers (tests/serve_client.mjs replay, when test_serve installed the package). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "serve/api.h"
#include "serve/output.h"
#include "t.h"

static json_t *parse(const char *text, size_t *content_len) {
    *content_len = 12345;
    return srv_parse_tool_calls(text, strlen(text), "call", content_len);
}

static const char *call_field(json_t *calls, size_t i, const char *key) {
    json_t *c = json_array_get(calls, i);
    if (!strcmp(key, "id")) return json_string_value(json_object_get(c, "id"));
    if (!strcmp(key, "type")) return json_string_value(json_object_get(c, "type"));
    return json_string_value(json_object_get(json_object_get(c, "function"), key));
}

static void test_parse_tool_calls(void) {
    size_t cl;
    json_t *c = parse("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", &cl);
    CHECK(c && json_array_size(c) == 1 && cl == 0);
    CHECK(c && !strcmp(call_field(c, 0, "name"), "get_weather") && !strcmp(call_field(c, 0, "arguments"), "{\"city\":\"Paris\"}") &&
          !strcmp(call_field(c, 0, "type"), "function") && !strcmp(call_field(c, 0, "id"), "call-0"));
    json_decref(c);
    /* content first, two calls, whitespace between and after, a call without arguments */
    const char *two = "Let me look.\n\n<tool_call>{\"name\":\"a\",\"arguments\":{\"x\":[1,2]}}</tool_call>\n"
                      "<tool_call>{\"name\":\"b\"}</tool_call>\n";
    c = parse(two, &cl);
    CHECKF(c && json_array_size(c) == 2 && cl == strlen("Let me look."), "cl %zu", cl);
    CHECK(c && !strcmp(call_field(c, 1, "name"), "b") && !strcmp(call_field(c, 1, "arguments"), "{}") &&
          !strcmp(call_field(c, 1, "id"), "call-1") && !strcmp(call_field(c, 0, "arguments"), "{\"x\":[1,2]}"));
    json_decref(c);
    /* not content + complete valid blocks: all text */
    static const char *const text[] = {
        "no calls here",
        "<tool_call>{\"name\": \"a\", \"arguments\": {}}",                       /* not closed */
        "<tool_call>{\"name\": \"a\", \"arguments\": {}</tool_call>",            /* bad JSON */
        "<tool_call>{\"arguments\": {}}</tool_call>",                           /* no name */
        "<tool_call>{\"name\": \"\"}</tool_call>",                             /* empty name */
        "<tool_call>{\"name\": \"a\", \"arguments\": \"x=1\"}</tool_call>",      /* arguments not an object */
        "<tool_call>[1]</tool_call>",                                          /* not an object */
        "<tool_call>{\"name\": \"a\"}</tool_call> and then more text",         /* text after the calls */
        "<tool_call>{\"name\": \"a\", \"name\": \"b\"}</tool_call>",             /* duplicate key */
        "<tool_call>",
        "",
    };
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) {
        c = parse(text[i], &cl);
        CHECKF(!c, "parsed as calls: %s", text[i]);
        json_decref(c);
    }
}

/* srv_response_json: calls when tools were given to a template with <tool_call> tags and the reply
 * stopped; text otherwise. */
static void test_response(void) {
    srv_api a = {.model_id = "m"};
    a.caps.tools = a.caps.tool_call_tags = true;
    srv_job j = {.chat = true, .tools = true};
    const char *reply = "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    srv_update u = {.text = (char *)reply, .text_len = strlen(reply), .done = true, .finish = SRV_FINISH_STOP, .n_prompt = 5, .n_gen = 9};
    json_t *r = srv_response_json(&a, &j, "chatcmpl-7", 1, &u, NULL, 0, NULL, 0);
    json_t *ch = json_array_get(json_object_get(r, "choices"), 0), *msg = json_object_get(ch, "message");
    CHECKF(!strcmp(json_string_value(json_object_get(ch, "finish_reason")), "tool_calls") &&
               !strcmp(json_string_value(json_object_get(msg, "content")), "Checking.") &&
               json_array_size(json_object_get(msg, "tool_calls")) == 1 &&
               !strcmp(call_field(json_object_get(msg, "tool_calls"), 0, "id"), "chatcmpl-7-0"),
           "%s", json_dumps(r, 0));
    json_decref(r);
    /* only calls: content null */
    const char *only = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
    u.text = (char *)only, u.text_len = strlen(only);
    r = srv_response_json(&a, &j, "x", 1, &u, NULL, 0, NULL, 0);
    msg = json_object_get(json_array_get(json_object_get(r, "choices"), 0), "message");
    CHECK(json_is_null(json_object_get(msg, "content")) && json_array_size(json_object_get(msg, "tool_calls")) == 1);
    json_decref(r);
    /* cut by max_tokens, no tools given, or a template without the tags: the text as content */
    for (int k = 0; k < 3; k++) {
        u.finish = k == 0 ? SRV_FINISH_LENGTH : SRV_FINISH_STOP;
        j.tools = k != 1;
        a.caps.tool_call_tags = k != 2;
        r = srv_response_json(&a, &j, "x", 1, &u, NULL, 0, NULL, 0);
        ch = json_array_get(json_object_get(r, "choices"), 0);
        msg = json_object_get(ch, "message");
        CHECKF(!json_object_get(msg, "tool_calls") && !strcmp(json_string_value(json_object_get(msg, "content")), only) &&
                   strcmp(json_string_value(json_object_get(ch, "finish_reason")), "tool_calls"),
               "case %d", k);
        json_decref(r);
    }
}

/* Replies for the stream tests: calls, content + calls, and ones that stay text. */
static const char *const replies[] = {
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    "Let me check.\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\"}\n</tool_call>\n",
    "Plain text, no calls at all.",
    "Text with a <toolbox> and <tool_cal and a final <",
    "ends in space \n",
    "<tool_call>{\"name\": \"a\", \"arguments\": {}}",                /* never closed */
    "<tool_call>{\"name\": \"a\"}</tool_call> and then more text",  /* text after */
    "<tool_call>{bad json}</tool_call>",
    "",
    "x<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"<tool_call>\"}}</tool_call>",
};

/* srv_toolsplit fed `step` bytes at a time: content + calls equal srv_parse_tool_calls's on the
 * whole; plain text is released as soon as it cannot be a tag. */
static void test_toolsplit(void) {
    for (size_t r = 0; r < sizeof replies / sizeof *replies; r++)
        for (size_t step = 1; step <= 7; step += 3) {
            const char *t = replies[r];
            size_t n = strlen(t), cl = 0;
            srv_toolsplit ts = {0};
            e0_strbuf out = {0};
            json_t *probe = srv_parse_tool_calls(t, n, "c", &cl);
            bool is_calls = probe != NULL;
            json_decref(probe);
            for (size_t i = 0; i < n; i += step) {
                size_t k = n - i < step ? n - i : step;
                CHECK(srv_toolsplit_feed(&ts, t + i, k, &out) == 0);
                /* before the end, nothing of the calls of a reply that is calls went out */
                CHECKF(!is_calls || !out.p || !strstr(out.p, "<tool_call>"), "reply %zu step %zu: %s", r, step, out.p);
            }
            json_t *calls = srv_toolsplit_end(&ts, true, "call", &out);
            json_t *whole = srv_parse_tool_calls(t, n, "call", &cl);
            char *a = calls ? json_dumps(calls, JSON_COMPACT) : NULL, *b = whole ? json_dumps(whole, JSON_COMPACT) : NULL;
            CHECKF((!a && !b) || (a && b && !strcmp(a, b)), "reply %zu step %zu: calls %s vs %s", r, step, a, b);
            size_t want = whole ? cl : n;
            CHECKF(out.len == want && (want == 0 || !memcmp(out.p, t, want)), "reply %zu step %zu: content '%s'", r, step, out.p);
            free(a), free(b);
            json_decref(calls), json_decref(whole);
            srv_toolsplit_free(&ts);
            free(out.p);
        }
    /* held only while it may be a tag (or whitespace before one) */
    srv_toolsplit ts = {0};
    e0_strbuf out = {0};
    CHECK(srv_toolsplit_feed(&ts, "Hello", 5, &out) == 0 && out.len == 5);
    CHECK(srv_toolsplit_feed(&ts, " <tool", 6, &out) == 0 && out.len == 5);
    CHECK(srv_toolsplit_feed(&ts, "box> ok", 7, &out) == 0 && out.len == 18 && !strcmp(out.p, "Hello <toolbox> ok"));
    CHECK(srv_toolsplit_feed(&ts, "\n", 1, &out) == 0 && out.len == 18);
    CHECK(srv_toolsplit_feed(&ts, "x", 1, &out) == 0 && out.len == 20);
    /* a block that is no call, or text after the blocks: content at once, and all that follows */
    static const char *const nocall[] = {"<tool_call>{\"name\": 1}</tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call>\n ok", " <tool_box"};
    for (int i = 0; i < 3; i++) {
        srv_toolsplit t2 = {0};
        e0_strbuf o2 = {0};
        CHECK(srv_toolsplit_feed(&t2, nocall[i], strlen(nocall[i]), &o2) == 0);
        CHECKF(o2.len == strlen(nocall[i]) && !memcmp(o2.p, nocall[i], o2.len), "'%s' held back: '%s'", nocall[i], o2.p);
        CHECK(i == 2 || (srv_toolsplit_feed(&t2, " <tool_call>", 12, &o2) == 0 && o2.len == strlen(nocall[i]) + 12));
        CHECK(!srv_toolsplit_end(&t2, true, "c", &o2));
        srv_toolsplit_free(&t2);
        free(o2.p);
    }
    /* valid so far, or not closed yet: held */
    static const char *const maybe[] = {"<tool_call>{\"name\": \"f\"}</tool_call>\n<tool", "<tool_call>{\"name\": 1", "<tool_call>{\"name\": \"f\"}</tool_call>\n"};
    for (int i = 0; i < 3; i++) {
        srv_toolsplit t2 = {0};
        e0_strbuf o2 = {0};
        CHECKF(srv_toolsplit_feed(&t2, maybe[i], strlen(maybe[i]), &o2) == 0 && o2.len == 0, "'%s' released '%s'", maybe[i], o2.p);
        json_decref(srv_toolsplit_end(&t2, true, "c", &o2));
        srv_toolsplit_free(&t2);
        free(o2.p);
    }
    /* cut by max_tokens (parse false): a complete block stays text */
    CHECK(srv_toolsplit_feed(&ts, "<tool_call>{\"name\":\"f\"}</tool_call>", 35, &out) == 0 && out.len == 20);
    CHECK(!srv_toolsplit_end(&ts, false, "c", &out) && out.len == 55);
    srv_toolsplit_free(&ts);
    free(out.p);
}

/* The SSE of reply fed through srv_sse `step` bytes per update (one id each), ending with fin. */
static char *sse_of(const srv_api *a, const srv_job *j, const char *reply, size_t step, srv_finish fin) {
    srv_sse s;
    srv_sse_init(&s, a, j, "chatcmpl-9", 1);
    e0_strbuf out = {0};
    size_t n = strlen(reply), i = 0;
    int id = 100;
    do {
        size_t k = n - i < step ? n - i : step;
        char piece[16];
        memcpy(piece, reply + i, k);
        piece[k] = 0;
        i += k;
        srv_update u = {.text = piece, .text_len = k, .ids = &id, .n_ids = 1, .done = i >= n, .finish = i >= n ? fin : SRV_FINISH_NONE,
                        .n_prompt = 7, .n_gen = (int)i};
        srv_sse_feed(&s, &u, &out);
        id++;
    } while (i < n);
    srv_sse_free(&s);
    return e0_sb_take(&out);
}

/* What a client puts together from SSE text: content, tool calls (by index), finish_reason; the
 * number of chunks with content, whether a content delta held a tag, [DONE] as the last line. */
typedef struct acc {
    e0_strbuf content;
    json_t *calls;
    char finish[32];
    int n_content, n_lines;
    bool tag_in_content, done_last, bad, usage;
} acc;
static void accumulate(const char *sse, acc *o) {
    memset(o, 0, sizeof *o);
    o->calls = json_array();
    const char *p = sse;
    while (p && *p) {
        const char *e = strstr(p, "\n\n");
        if (strncmp(p, "data: ", 6) || !e) {
            o->bad = true;
            break;
        }
        o->n_lines++;
        o->done_last = !strncmp(p, "data: [DONE]\n\n", 14) && !e[2];
        if (!o->done_last) {
            json_t *c = json_loadb(p + 6, (size_t)(e - p - 6), 0, NULL);
            json_t *ch = json_array_get(json_object_get(c, "choices"), 0), *d = json_object_get(ch, "delta");
            if (!c) o->bad = true;
            if (json_is_object(json_object_get(c, "usage"))) o->usage = true;
            const char *t = json_string_value(json_object_get(d, "content"));
            if (t && *t) {
                o->n_content++;
                e0_sb_add(&o->content, t, strlen(t));
                if (strstr(t, "<tool_call>") || strstr(t, "</tool_call>")) o->tag_in_content = true;
            }
            size_t i;
            json_t *tc;
            json_array_foreach(json_object_get(d, "tool_calls"), i, tc) {
                json_int_t ix = json_integer_value(json_object_get(tc, "index"));
                if (ix == (json_int_t)json_array_size(o->calls)) {
                    json_t *copy = json_deep_copy(tc);
                    json_object_del(copy, "index");
                    json_array_append_new(o->calls, copy);
                } else o->bad = true; /* whole calls, in order */
            }
            const char *f = json_string_value(json_object_get(ch, "finish_reason"));
            if (f) snprintf(o->finish, sizeof o->finish, "%s", f);
            json_decref(c);
        }
        p = e + 2;
    }
}

/* srv_sse against srv_response_json for every reply, updates of 1 to 7 bytes. */
static void test_sse_tool_calls(void) {
    srv_api a = {.model_id = "m"};
    a.caps.tools = a.caps.tool_call_tags = true;
    srv_job j = {.chat = true, .tools = true, .stream = true, .include_usage = true};
    for (size_t r = 0; r < sizeof replies / sizeof *replies; r++)
        for (int f = 0; f < 2; f++)
            for (size_t step = 1; step <= 7; step += 2) {
                srv_finish fin = f ? SRV_FINISH_LENGTH : SRV_FINISH_STOP;
                char *sse = sse_of(&a, &j, replies[r], step, fin);
                srv_update u = {.text = (char *)replies[r], .text_len = strlen(replies[r]), .done = true, .finish = fin};
                json_t *whole = srv_response_json(&a, &j, "chatcmpl-9", 1, &u, NULL, 0, NULL, 0);
                json_t *ch = json_array_get(json_object_get(whole, "choices"), 0), *msg = json_object_get(ch, "message");
                const char *wc = json_string_value(json_object_get(msg, "content"));
                json_t *wcalls = json_object_get(msg, "tool_calls");
                acc o;
                accumulate(sse, &o);
                char *x = json_dumps(o.calls, JSON_COMPACT | JSON_SORT_KEYS);
                char *y = wcalls ? json_dumps(wcalls, JSON_COMPACT | JSON_SORT_KEYS) : strdup("[]");
                CHECKF(!o.bad && o.done_last && o.usage && (!wcalls || !o.tag_in_content) && x && y && !strcmp(x, y) &&
                           !strcmp(o.finish, json_string_value(json_object_get(ch, "finish_reason"))) &&
                           !strcmp(o.content.p ? o.content.p : "", wc ? wc : ""),
                       "reply %zu fin %d step %zu: calls %s vs %s, content '%s' vs '%s', finish %s\n%s", r, f, step, x, y, o.content.p, wc,
                       o.finish, sse);
                free(x), free(y), free(sse), free(o.content.p);
                json_decref(o.calls), json_decref(whole);
            }
    /* one chunk per call with id, type, name and arguments; a reply of calls only: content null */
    char *sse = sse_of(&a, &j, replies[1], 3, SRV_FINISH_STOP);
    CHECKF(sse && strstr(sse, "\"delta\":{\"role\":\"assistant\",\"content\":\"Let\"}") &&
               strstr(sse, "\"tool_calls\":[{\"id\":\"chatcmpl-9-0\",\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":"
                           "\"{\\\"x\\\":[1,2]}\"},\"index\":0}]") &&
               strstr(sse, "{\"name\":\"b\",\"arguments\":\"{}\"},\"index\":1}") && strstr(sse, "\"finish_reason\":\"tool_calls\""),
           "%s", sse);
    char *only = sse_of(&a, &j, replies[0], 2, SRV_FINISH_STOP);
    CHECKF(only && strstr(only, "\"delta\":{\"role\":\"assistant\",\"content\":null}") && !strstr(only, "\"content\":\""), "%s", only);
    free(only);
    /* for tests/serve_client.mjs replay (the openai package's stream helpers) */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.900s/test-serve-api", t_build());
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%.900s/test-serve-api/toolcalls.sse", t_build());
    FILE *fp = fopen(path, "w");
    CHECK(fp && sse && fputs(sse, fp) >= 0);
    if (fp) fclose(fp);
    free(sse);
    srv_update wu = {.text = (char *)replies[1], .text_len = strlen(replies[1]), .done = true, .finish = SRV_FINISH_STOP};
    json_t *whole = srv_response_json(&a, &j, "chatcmpl-9", 1, &wu, NULL, 0, NULL, 0);
    strcat(path, ".json");
    CHECK(whole && json_dump_file(whole, path, JSON_COMPACT) == 0);
    json_decref(whole);
    /* plain text with tools: every update's text goes out in its own chunk (1 byte each here) */
    const char *plain = "Hello there, friend";
    sse = sse_of(&a, &j, plain, 1, SRV_FINISH_STOP);
    acc o;
    accumulate(sse, &o);
    CHECKF(o.n_content == (int)strlen(plain) - 2 /* the two spaces wait for the next byte */ && !strcmp(o.content.p, plain) &&
               !strcmp(o.finish, "stop"),
           "%d content chunks: %s", o.n_content, sse);
    free(sse), free(o.content.p), json_decref(o.calls);
    /* without tools (or without tags): text as it comes, tags and all; the first chunk's content "" */
    j.tools = false;
    sse = sse_of(&a, &j, replies[0], 4, SRV_FINISH_STOP);
    accumulate(sse, &o);
    CHECKF(strstr(o.content.p, "<tool_call>") && !strcmp(o.content.p, replies[0]) && !strcmp(o.finish, "stop") && json_array_size(o.calls) == 0 &&
               strstr(sse, "\"delta\":{\"role\":\"assistant\",\"content\":\"<too\"}"),
           "%s", sse);
    free(sse), free(o.content.p), json_decref(o.calls);
    /* an error ends the stream with an error event and [DONE]; held text goes out first */
    j.tools = true;
    sse = sse_of(&a, &j, "ok <tool_call>{\"name\":\"f\"}</tool_call>", 5, SRV_FINISH_TIMEOUT);
    CHECKF(sse && strstr(sse, "\"code\":503") && strstr(sse, "time limit") && strstr(sse, "data: [DONE]\n\n") && !strstr(sse, "tool_calls\":[") &&
               !strstr(sse, "finish_reason\":\""),
           "%s", sse);
    free(sse);
}

/* The official openai package's stream helper reads that SSE (tests/serve_client.mjs replay);
 * the package goes into build/test-serve/npm as test_serve installs it (one install at a time). */
static void test_openai_replay(void) {
    char build[PATH_MAX], root[PATH_MAX], cmd[PATH_MAX * 8], out[8192];
    if (!realpath(t_build(), build) || !realpath(".", root)) SKIP("no %s", t_build());
    if (t_sh("command -v node >/dev/null && command -v npm >/dev/null && command -v flock >/dev/null", NULL, 0) != 0)
        SKIP("node, npm or flock not installed");
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/test-serve && flock %s/test-serve/npm.lock sh -c 'test -f %s/test-serve/npm/node_modules/openai/index.mjs || "
             "timeout 120 npm install --prefix %s/test-serve/npm --no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 "
             "openai@4.104.0 >%s/test-serve/npm-api.log 2>&1'",
             build, build, build, build, build);
    if (t_sh(cmd, NULL, 0) != 0) SKIP("npm install openai failed (registry unreachable? see %s/test-serve/npm-api.log)", build);
    snprintf(cmd, sizeof cmd, "node %s/tests/serve_client.mjs replay %s/test-serve-api/toolcalls.sse %s/test-serve/npm 2>&1", root, build, build);
    int rc = t_sh(cmd, out, sizeof out);
    CHECKF(rc == 0 && !strstr(out, "FAIL") && strstr(out, "ok replay_tool_calls") && strstr(out, "ok replay_arguments_done"), "%s", out);
}

int main(void) {
    RUN(test_parse_tool_calls);
    RUN(test_response);
    RUN(test_toolsplit);
    RUN(test_sse_tool_calls);
    RUN(test_openai_replay);
    return T_DONE();
}
