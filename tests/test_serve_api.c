/* test_serve_api.c — unit tests of serve's reply building (src/serve/output.c, api.c) that need
 * no server: tool calls parsed out of a generated reply (srv_parse_tool_calls) and the chat
 * response built from them (srv_response_json: message.tool_calls, finish_reason "tool_calls",
 * content null or the text before the calls), and replies left as text when they are not
 * content + complete, valid <tool_call> blocks. */
#include <jansson.h>
#include <string.h>

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

int main(void) {
    RUN(test_parse_tool_calls);
    RUN(test_response);
    return T_DONE();
}
