/* serve.c — `serve`: the OpenAI-compatible HTTP server (src/serve: scheduler, API, HTTP). Parses
 * the flags, loads the model once with one context per slot, starts the scheduler and the HTTP
 * daemon, and waits for SIGTERM/SIGINT: then it stops accepting, lets running requests finish
 * for --shutdown-grace seconds (cancelling what is left), and exits 0. */
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cli.h"
#include "engine/options.h"
#include "serve/http.h"
#include "serve/sched.h"
#include "text/prompt.h"

static void help(void) {
    puts("usage: edge0-infer serve -m F [--host H] [--port P] [-np N] [-c N] [--api-key K] [options]\n"
         "An OpenAI-compatible HTTP server: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,\n"
         "GET /health, POST /tokenize, POST /detokenize, POST /apply-template, GET /metrics (Prometheus text).\n"
         "  --host H             address to listen on (default 127.0.0.1); any other than loopback needs --api-key\n"
         "  --port P             (default 8080; 0 = any free port, printed on stderr)\n"
         "  -np, --parallel N    sequence slots decoded together (default 4, at most 64)\n"
         "  -c, --ctx-size N     total KV cache positions, split evenly: each slot holds N/np tokens (prompt and\n"
         "                       reply); default: each slot min(model context, 4096)\n"
         "  --api-key K          require 'Authorization: Bearer K' (all endpoints but /health); off by default\n"
         "  --timeout S          seconds a request may take, waiting in the queue included (default 600; 0 = none)\n"
         "  --max-queue N        requests waiting for a slot; more get 429 (default 64; 0: none wait)\n"
         "  --prefill-budget N   prompt tokens a step takes while other sequences decode (default: -b, a whole\n"
         "                       chunk). Long prompts arriving while others stream: e.g. 128 makes their pauses\n"
         "                       ~3x shorter and the long prompt's first token ~20% later; short prompts gain\n"
         "                       nothing (docs/perf.md). Replies are the same either way\n"
         "  --conn-timeout S     seconds a connection may stay silent (headers or body not coming, a client not\n"
         "                       reading its stream, an idle keep-alive) before it is closed (default 60)\n"
         "  --max-body BYTES     largest request body; larger ones get 413 (default 8MiB)\n"
         "  --alias NAME         the model's id in /v1/models and responses (default: the file name)\n"
         "  --shutdown-grace S   on SIGTERM, seconds running requests may take to finish (default 10)\n"
         "Request defaults (a request's own fields win): the sampling flags below, -n (max_tokens),\n"
         "--chat-template-file F (instead of the model's template). Extensions of the request body:\n"
         "ignore_eos, return_tokens (the generated ids in each choice), top_k, min_p, repeat_penalty,\n"
         "repeat_last_n, cache_prompt. Chat: 'tools' (tool_choice auto or none) and tool messages go to the\n"
         "template when it renders them (else 400); a reply of <tool_call> blocks (templates that ask for\n"
         "them) comes back as message.tool_calls, or streamed as delta.tool_calls chunks. logit_bias: OpenAI's\n"
         "{\"token id\": bias from -100 to 100} or llama-server's [[id, bias or false], ...] (at most 300 tokens).\n"
         "Constrained output: response_format {\"type\": \"json_object\"} (any JSON object) or {\"type\":\n"
         "\"json_schema\", \"json_schema\": {\"schema\": ...}}, llama-server's json_schema and grammar (GBNF);\n"
         "--grammar / -j give the default for requests that ask for none.\n"
         "Refused with 400, never ignored: what cannot be honoured (schema keywords the grammar would not\n"
         "enforce, such as multipleOf or a pattern with lookahead; n > 1; echo, suffix, best_of > 1).\n"
         "A prompt that extends what a slot's cache holds reuses it\n"
         "(usage.prompt_tokens_details.cached_tokens) unless the request says \"cache_prompt\": false.");
    fputs(cli_gen_help, stdout);
    puts("common model flags: -m/--model F, -t/--threads N, -b/--batch-size N (prefill chunk), and");
    fputs(cli_model_flags_help, stdout);
    fputs(e0_options_help(), stdout);
    cli_kv_flags_help();
}

/* Every address host names is a loopback address. */
static bool loopback_only(const char *host) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL, *p;
    if (getaddrinfo(host, NULL, &hints, &ai) != 0) return false;
    bool ok = ai != NULL;
    for (p = ai; p; p = p->ai_next) {
        if (p->ai_family == AF_INET) {
            const struct sockaddr_in *a = (const struct sockaddr_in *)p->ai_addr;
            ok &= (ntohl(a->sin_addr.s_addr) >> 24) == 127;
        } else if (p->ai_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)p->ai_addr;
            ok &= IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) != 0;
        } else ok = false;
    }
    freeaddrinfo(ai);
    return ok;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int cmd_serve(int argc, char **argv) {
    cli_model_opts o = {0};
    cli_gen_flags g;
    cli_gen_init(&g);
    srv_http_params hp = {.host = "127.0.0.1", .port = 8080, .max_body = 8u << 20, .conn_timeout = 60, .max_conns = 1024};
    int64_t n_slots = 4, max_queue = 64, prefill_budget = 0;
    double timeout = 600, grace = 10;
    const char *alias = NULL;
    e0_err e;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) return help(), 0;
        int r = cli_model_flag(&o, argc, argv, &i);
        if (r < 0) return 1;
        if (r > 0) continue;
        r = cli_gen_flag(&g, argc, argv, &i);
        if (r < 0) return 1;
        if (r > 0) continue;
        static const char *const with_value[] = {"--host", "--port", "-np", "--parallel", "--api-key", "--timeout",
                                                 "--max-queue", "--max-body", "--alias", "--shutdown-grace", "--conn-timeout",
                                                 "--prefill-budget"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(f, with_value[k]);
        if (!known) return cli_error("serve: unknown flag '%s' (see serve --help)", f);
        if (!(v = cli_value(argc, argv, &i))) return 1;
        int64_t n;
        uint64_t sz;
        if (!strcmp(f, "--host")) hp.host = v;
        else if (!strcmp(f, "--api-key")) {
            if (!*v) return cli_error("--api-key needs a non-empty key");
            hp.api_key = v;
        } else if (!strcmp(f, "--alias")) alias = v;
        else if (!strcmp(f, "--port")) {
            if (e0_parse_i64(v, 0, 65535, &n, f, &e) < 0) return cli_error("%s", e.msg);
            hp.port = (int)n;
        } else if (!strcmp(f, "-np") || !strcmp(f, "--parallel")) {
            if (e0_parse_i64(v, 1, 64, &n_slots, f, &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(f, "--conn-timeout")) {
            if (e0_parse_i64(v, 1, 86400, &n, f, &e) < 0) return cli_error("%s", e.msg);
            hp.conn_timeout = (unsigned)n;
        } else if (!strcmp(f, "--prefill-budget")) {
            if (e0_parse_i64(v, 1, 1 << 20, &prefill_budget, f, &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(f, "--max-queue")) {
            if (e0_parse_i64(v, 0, 1 << 20, &max_queue, f, &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(f, "--max-body")) {
            if (e0_parse_size(v, &sz, f, &e) < 0) return cli_error("%s", e.msg);
            if (sz < 1024 || sz > (1ull << 30)) return cli_error("--max-body must be between 1KiB and 1GiB");
            hp.max_body = (size_t)sz;
        } else {
            double d;
            if (e0_parse_f64(v, 0, 1e7, &d, f, &e) < 0) return cli_error("%s", e.msg);
            if (!strcmp(f, "--timeout")) timeout = d;
            else grace = d;
        }
    }
    if (!o.model) return cli_error("serve: --model is required (see serve --help)");
    if (g.n_stop || g.system) return cli_error("serve: --stop and -sys are per request (the request's 'stop' and messages)");
    if (!hp.api_key && !loopback_only(hp.host))
        return cli_error("serve: --host %s is reachable from other machines: give --api-key K (or bind 127.0.0.1)", hp.host);

    /* the context of each slot, and the memory the other slots' contexts take from the budget */
    e0_model *probe = e0_model_load(o.model, NULL, false, &e);
    if (!probe) return cli_error("%s", e.msg);
    int64_t train = probe->hp.n_ctx_train;
    int64_t slot_ctx = o.n_ctx ? o.n_ctx / n_slots : (train < 4096 ? train : 4096);
    if (slot_ctx < 8) {
        e0_model_free(probe);
        return cli_error("serve: -c %d split over %lld slots leaves %lld tokens each: raise -c or lower -np", o.n_ctx,
                         (long long)n_slots, (long long)slot_ctx);
    }
    o.n_ctx = (int)slot_ctx;
    if (!o.options_init) { /* the defaults cli_model_flag sets on first use */
        char empty[] = "", *fake[] = {empty, NULL};
        int i0 = 0;
        cli_model_flag(&o, 1, fake, &i0);
    }
    e0_ctx_params cp = {.n_ctx = o.n_ctx, .n_threads = o.threads, .n_batch = o.n_batch, .type_k = o.type_k, .type_v = o.type_v};
    e0_session plan = {0};
    uint64_t extra = (uint64_t)(n_slots - 1) * e0_ctx_memory_sharing(probe, &cp); /* slot 0's scratch serves them all */
    e0_model_free(probe);
    if (e0_plan(o.model, &o.opt, &cp, &plan, &e) < 0) return cli_error("%s", e.msg);
    if (extra) {
        if (plan.budget <= extra)
            return cli_error("serve: %lld slots' contexts (%.1f MiB more) do not fit the memory budget (%.1f MiB): lower -np or -c",
                             (long long)n_slots, extra / 1048576.0, plan.budget / 1048576.0);
        o.opt.memory_budget = plan.budget - extra; /* the residency rule sees what the other slots leave */
    }

    /* signals are taken by sigwait below: blocked before any thread starts (threads inherit it) */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    e0_model *m;
    e0_ctx *c;
    if (cli_load(&o, 0, &m, &c)) return 1;
    int status = 0;
    e0_tokenizer *tok = e0_model_tokenizer(m, &e);
    char *tmpl_file = NULL;
    srv_api api = {.m = m, .tok = tok, .model_id = alias ? alias : base_name(o.model), .n_ctx = e0_ctx_n_ctx(c),
                   .max_tokens = g.n_predict, .timeout = timeout, .model_path = o.model, .model_size = m->gguf->total_size,
                   .kv_type_k = e0_kv_type_name(e0_ctx_type_k(c)), .kv_type_v = e0_kv_type_name(e0_ctx_type_v(c)),
                   .threads = e0_ctx_n_threads(c), .n_slots = (int)n_slots};
    if (!tok) status = cli_error("%s", e.msg);
    else if (cli_gen_finish(&g, e0_ctx_n_ctx(c), m->hp.n_vocab)) status = 1;
    api.sp = g.sp;
    api.seed_fixed = g.seed_given; /* else a request without a seed gets one of its own */
    api.grammar = g.grammar_text, api.grammar_len = g.grammar_len; /* parsed per request, which owns its grammar */
    if (!status && g.chat_template_file) {
        if (!(tmpl_file = e0_read_file(g.chat_template_file, 4u << 20, &api.tlen, &e))) status = cli_error("%s", e.msg);
        api.tmpl = tmpl_file;
    } else if (!status) api.tmpl = e0_model_chat_template(m, &api.tlen);
    if (!status) srv_api_probe(&api); /* what the template does with tools */
    srv_sched *sched = NULL;
    srv_http *http = NULL;
    if (!status) {
        srv_sched_params sp = {.n_slots = (int)n_slots, .max_queue = (int)max_queue, .prefill_budget = (int)prefill_budget,
                               .cp = {.n_ctx = e0_ctx_n_ctx(c), .n_threads = e0_ctx_n_threads(c),
                                      .n_threads_prefill = e0_ctx_n_threads_prefill(c), .n_batch = e0_ctx_n_batch(c),
                                      .type_k = e0_ctx_type_k(c), .type_v = e0_ctx_type_v(c)}};
        if (!(sched = srv_sched_new(&o.session, tok, &sp, &e))) status = cli_error("%s", e.msg);
    }
    if (!status && !(http = srv_http_start(&hp, &api, sched, &e))) status = cli_error("%s", e.msg);
    if (!status) {
        fprintf(stderr, "serve: listening on http://%s:%d (%lld slots of %d tokens, model %s%s)\n", hp.host,
                srv_http_port(http), (long long)n_slots, e0_ctx_n_ctx(c), api.model_id, hp.api_key ? ", API key required" : "");
        int sig = 0;
        sigwait(&sigs, &sig);
        fprintf(stderr, "serve: %s: no new connections; finishing the requests in flight (up to %g s)\n",
                sig == SIGTERM ? "SIGTERM" : "SIGINT", grace);
        srv_http_quiesce(http);
        srv_drain(sched, grace);
        srv_http_wait_idle(http, 5); /* the last chunks and responses reach their clients */
    }
    srv_http_stop(http);
    srv_sched_free(sched);
    if (!status) fprintf(stderr, "serve: stopped\n");
    free(tmpl_file);
    cli_gen_free(&g);
    e0_tokenizer_free(tok);
    cli_unload(&o);
    return status;
}
