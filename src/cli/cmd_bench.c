/* cmd_bench.c — `bench`: measure one process: time to first token, prefill and decode speed,
 * inter-token latencies, memory, energy, and where decode time goes; one JSON row per run on
 * stdout (schema in docs/bench.md), a readable summary on stderr. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/options.h"
#include "text/prompt.h"
#include "quant/quant.h"
#include "measure/stats.h"
#include "engine/experts.h"
#include "engine/sample.h"
#include "measure/sysinfo.h"

static void help(void) {
    puts("usage: edge0-infer bench --model F [--user-file F | --prompt-text TEXT | --prompt-fixture long|medium|short]\n"
         "         [--warmup 10]"
         "         [--ntok 100] [--runs 1] [--breakdown] [--threads N] [--prefill-threads N] [--context N]\n"
         "         [--mode single|sustained] [--duration S] [--raw] [--model-option k=v ...]\n"
         "Prefills the prompt (with the model's chat template unless --raw), then decodes greedily:\n"
         "--warmup untimed steps, then --ntok timed steps (512 for --prompt short). Prints one JSON\n"
         "row per run on stdout (see docs/bench.md) and a summary on stderr.\n"
         "With llama-bench's flags (-p, -n, -pg, -d, -r, -o) it measures as llama-bench does instead:\n"
         "see `bench -p 512 --help`.\n"
         "  --prompt-fixture NAME  (also --prompt NAME, as before) a prompt from tests/fixtures/bench:\n"
         "                    long = library-report-prompt.txt (5,534 tokens in Qwen3's vocabulary),\n"
         "                    medium = library-report-prompt-head.txt (1,230 there; the default),\n"
         "                    short = short-story-prompt.txt\n"
         "  --prompt-text TEXT  the user's message itself (what run -p takes)\n"
         "  --user-file F     the user's message from a file\n"
         "  --tokens-file F   the prompt as token ids (separated by spaces, newlines or commas, as\n"
         "                    `tokenize` prints them; no chat template): what `edge0-bench compare`\n"
         "                    gives every engine\n"
         "  --mode sustained  decode for --duration seconds (default 60): mean tok/s and its slope\n"
         "  --breakdown       add the split of decode time per step part, and of the prefill (with\n"
         "                    --batch-size: of all B prompts' batched prefill); MoE: the experts computed\n"
         "                    per layer pass (a batch's union) and their weight bytes per step\n"
         "  --progress        prefill progress on stderr even when it is not a terminal\n"
         "  -t, --threads N   decode threads (default: the physical cores, at most the usable CPUs:\n"
         "                    affinity mask and cgroup CPU quota; a larger N is lowered to them with\n"
         "                    a warning unless E0_FORCE_THREADS=1 is set)\n"
         "  --prefill-threads N  prefill threads (default: the decode threads; capped the same way)\n"
         "  -c, --context N   context tokens (default 4096, or what the run needs when more: prompt +\n"
         "                    warm-up + timed steps, up to the model's trained length)\n"
         "  --batch-size B    B sequences over the one model: the prompt prefilled into each (batched: as\n"
         "                    many sequences' chunks a forward pass as fit in -b), then they decode in\n"
         "                    lockstep, one batched forward pass (e0_eval_batch) per step;\n"
         "                    the row's decode_tokens_per_second is the aggregate (B * steps / time),\n"
         "                    per_sequence_decode_tokens_per_second one sequence's (--mode single only)\n"
         "  --batch-distinct  with --batch-size: sequence b's prompt is the prompt rotated left by b * n / B of\n"
         "                    its n tokens (the same tokens and length, another order), so the sequences\n"
         "                    decode different tokens and a MoE step computes the union of their experts,\n"
         "                    as a server's distinct requests do (default: B copies of the prompt, the\n"
         "                    harness's batch workload, whose greedy sequences share every expert)");
    puts("common model flags: -m/--model F, -t/--threads N, -c/--ctx-size N, -b N (prefill chunk; in this mode\n"
         "--batch-size is the number of sequences, above), and");
    fputs(e0_options_help(), stdout);
    cli_kv_flags_help();
}

static const char *fixture_for(const char *name) {
    if (!strcmp(name, "long")) return "library-report-prompt.txt";
    if (!strcmp(name, "medium")) return "library-report-prompt-head.txt";
    if (!strcmp(name, "short")) return "short-story-prompt.txt";
    return NULL;
}

/* Find a fixture relative to the current directory, else to the binary (build/bin/..). */
static char *read_fixture(const char *file, char *path, size_t cap, e0_err *e) {
    snprintf(path, cap, "tests/fixtures/bench/%s", file);
    if (access(path, R_OK) != 0) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            char *slash = strrchr(exe, '/');
            if (slash) *slash = 0;
            snprintf(path, cap, "%s/../../tests/fixtures/bench/%s", exe, file);
        }
    }
    return e0_read_file(path, 16 << 20, NULL, e);
}

static json_t *tensor_types_json(const gguf_file *f) {
    json_t *o = json_object();
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        char buf[32];
        const char *name = e0_type_name(f->tensors[i].type, buf);
        json_t *v = json_object_get(o, name);
        json_object_set_new(o, name, json_integer(v ? json_integer_value(v) + 1 : 1));
    }
    return o;
}

/* A split model's identity: model.path, size and sha256 are its first file's (the metadata);
 * split_files lists the others the same way, total_size counts them all. */
static void add_split_files(json_t *model, const gguf_file *f) {
    json_t *files = json_array();
    for (uint32_t i = 1; i < f->n_splits; i++) {
        char hex[65];
        e0_err e;
        const gguf_split *s = &f->splits[i];
        json_array_append_new(files, json_pack("{s:s, s:I, s:o}", "path", s->path, "size", (json_int_t)s->size, "sha256",
                                               e0_sha256_file_cached(s->path, hex, &e) == 0 ? json_string(hex)
                                                                                            : e0_unavailable("%s", e.msg)));
    }
    json_object_set_new(model, "split_files", files);
    json_object_set_new(model, "total_size", json_integer((json_int_t)f->total_size));
}

typedef struct {
    cli_model_opts o;
    const char *user_file, *prompt_name, *prompt_text, *tokens_file, *mode;
    int64_t warmup, ntok, runs, prefill_threads;
    int64_t batch_size; /* --batch-size: sequences decoded in lockstep; 0 = not given (one, unbatched) */
    double duration;
    bool breakdown, raw, ntok_given, progress, batch_distinct;
} bench_args;

static int parse_args(bench_args *a, int argc, char **argv) {
    e0_err e;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch-size")) { /* here: sequences, not the common flag's prefill chunk (-b) */
            const char *v = cli_value(argc, argv, &i);
            if (!v) return 1;
            if (e0_parse_i64(v, 1, 256, &a->batch_size, "--batch-size", &e) < 0) return cli_error("%s", e.msg);
            continue;
        }
        int r = cli_model_flag(&a->o, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return help(), -1;
        static const char *const with_value[] = {"--user-file", "--prompt", "--prompt-fixture", "--prompt-text", "--tokens-file", "--mode", "--warmup",
                                                 "--ntok", "--runs", "--prefill-threads", "--duration"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(f, with_value[k]);
        if (!strcmp(f, "--breakdown")) a->breakdown = true;
        else if (!strcmp(f, "--batch-distinct")) a->batch_distinct = true;
        else if (!strcmp(f, "--progress")) a->progress = true;
        else if (!strcmp(f, "--raw")) a->raw = true;
        else if (!known) return cli_error("bench: unknown option '%s' (see --help)", f);
        else if (!(v = cli_value(argc, argv, &i))) return 1;
        else if (!strcmp(f, "--user-file")) a->user_file = v;
        else if (!strcmp(f, "--prompt") || !strcmp(f, "--prompt-fixture")) a->prompt_name = v;
        else if (!strcmp(f, "--prompt-text")) a->prompt_text = v;
        else if (!strcmp(f, "--tokens-file")) a->tokens_file = v;
        else if (!strcmp(f, "--mode")) a->mode = v;
        else if (!strcmp(f, "--warmup") && e0_parse_i64(v, 0, 1 << 20, &a->warmup, f, &e) < 0) return cli_error("%s", e.msg);
        else if (!strcmp(f, "--ntok") && e0_parse_i64(v, 1, 1 << 22, &a->ntok, f, &e) < 0) return cli_error("%s", e.msg);
        else if (!strcmp(f, "--runs") && e0_parse_i64(v, 1, 1000, &a->runs, f, &e) < 0) return cli_error("%s", e.msg);
        else if (!strcmp(f, "--prefill-threads") && e0_parse_i64(v, 1, 1024, &a->prefill_threads, f, &e) < 0)
            return cli_error("%s", e.msg);
        else if (!strcmp(f, "--duration") && e0_parse_f64(v, 0.1, 86400, &a->duration, f, &e) < 0) return cli_error("%s", e.msg);
        if (!strcmp(f, "--ntok")) a->ntok_given = true;
    }
    if (!!a->user_file + !!a->prompt_name + !!a->prompt_text + !!a->tokens_file > 1)
        return cli_error("bench: give one of --user-file, --prompt-text, --prompt-fixture or --tokens-file");
    if (a->prompt_text && !*a->prompt_text) return cli_error("bench: --prompt-text is empty");
    if (a->prompt_name && !fixture_for(a->prompt_name))
        return cli_error("bench: --prompt-fixture (--prompt) must be long, medium or short (got '%s'; a text prompt is "
                         "--prompt-text)", a->prompt_name);
    if (strcmp(a->mode, "single") && strcmp(a->mode, "sustained"))
        return cli_error("bench: --mode must be single or sustained (got '%s')", a->mode);
    if (!a->ntok_given && a->prompt_name && !strcmp(a->prompt_name, "short")) a->ntok = 512;
    if (a->batch_size && strcmp(a->mode, "single")) return cli_error("bench: --batch-size works with --mode single only");
    if (a->batch_distinct && !a->batch_size) return cli_error("bench: --batch-distinct needs --batch-size");
    return 0;
}

/* Everything measured in one run. */
typedef struct {
    double prefill_s, decode_s;
    int n_decode;
    double *itl; /* n_decode inter-token latencies */
    double sustained_s, sustained_tps, sustained_slope;
    json_t *sustained_series; /* --mode sustained: {"interval_s", "t_s": [...], "tokens_per_second": [...]} */
    e0_ctx_stats st; /* decode-phase stats (--batch-size: summed over the sequences) */
    e0_ctx_stats pst; /* prefill-phase stats (--breakdown; a batch: its contexts' summed) */
    bool agree;      /* --batch-size: every sequence generated the same ids (copies of one prompt) */
    e0_experts_stats xs; /* expert cache, decode phase */
    double sampling_s;
} run_result;

static int run_once(e0_ctx *c, e0_experts *xc, const bench_args *a, const int *prompt, int n_prompt, run_result *r,
                    e0_energy_reading *en0, e0_energy_reading *en1, e0_err *e) {
    const e0_model *m = e0_ctx_model(c);
    const int64_t V = m->hp.n_vocab;
    e0_ctx_truncate(c, 0);
    e0_ctx_reset_stats(c);
    e0_ctx_enable_timing(c, a->breakdown);
    double t0 = e0_now();
    /* chunk by chunk, as e0_eval would, to show progress on long prompts (a terminal or --progress) */
    const int chunk = e0_ctx_n_batch(c);
    const bool tty = isatty(STDERR_FILENO), show = (a->progress || tty) && n_prompt > chunk;
    double shown = t0; /* not a terminal: a line a second */
    for (int done = 0; done < n_prompt;) {
        int k = n_prompt - done < chunk ? n_prompt - done : chunk;
        if (e0_eval(c, prompt + done, k, NULL, e) < 0) {
            if (show && tty) fputc('\n', stderr);
            return -1;
        }
        done += k;
        double now = e0_now();
        if (show && (tty || now - shown >= 1.0 || done == n_prompt)) {
            fprintf(stderr, "%sprefill: %d/%d tokens (%.0f tok/s)%s", tty ? "\r" : "", done, n_prompt, done / (now - t0),
                    !tty || done == n_prompt ? "\n" : "");
            shown = now;
        }
    }
    int tok = e0_argmax(e0_ctx_logits(c), V);
    r->prefill_s = e0_now() - t0;
    r->pst = *e0_ctx_get_stats(c);
    e0_ctx_enable_timing(c, false);
    for (int64_t k = 0; k < a->warmup; k++) {
        if (e0_decode(c, tok, e) < 0) return -1;
        tok = e0_argmax(e0_ctx_logits(c), V);
    }
    e0_ctx_reset_stats(c);
    if (xc) e0_experts_reset_stats(xc);
    e0_ctx_enable_timing(c, a->breakdown);
    e0_energy_read(en0);
    bool sustained = !strcmp(a->mode, "sustained");
    double start = e0_now(), prev = start, *rate_t = NULL, *rate_y = NULL, window_start = start;
    int n_rates = 0, cap = 0, window_start_count = 0;
    int64_t steps = sustained ? INT64_MAX : a->ntok;
    r->n_decode = 0;
    for (int64_t k = 0; k < steps; k++) {
        if (e0_ctx_pos(c) + 1 > e0_ctx_n_ctx(c)) {
            if (!sustained) return e0_fail(e, "context full after %d tokens (raise --context)", e0_ctx_pos(c));
            e0_ctx_truncate(c, n_prompt); /* sustained: start the continuation again */
            /* sliding-window models may have to prefill again, and a hybrid model's recurrent state
             * cannot go back to the prompt (counted in that step's time, as a context rebuild) */
            int kept = e0_ctx_pos(c);
            if (kept < n_prompt && e0_eval(c, prompt + kept, n_prompt - kept, NULL, e) < 0) return -1;
        }
        if (e0_decode(c, tok, e) < 0) return -1;
        double ts = a->breakdown ? e0_now() : 0;
        tok = e0_argmax(e0_ctx_logits(c), V);
        double now = e0_now();
        if (a->breakdown) r->sampling_s += now - ts;
        if (r->n_decode < a->ntok) r->itl[r->n_decode] = now - prev;
        r->n_decode++;
        prev = now;
        if (sustained) {
            if (now - start >= a->duration) break;
            if (n_rates == cap) { /* one point per second of tok/s */
                cap = cap ? cap * 2 : 256;
                double *nt = realloc(rate_t, (size_t)cap * sizeof *rate_t), *ny = nt ? realloc(rate_y, (size_t)cap * sizeof *rate_y) : NULL;
                if (nt) rate_t = nt;
                if (ny) rate_y = ny;
                if (!nt || !ny) {
                    free(rate_t);
                    free(rate_y);
                    return e0_fail(e, "out of memory");
                }
            }
            if (now - window_start >= 1.0) {
                rate_t[n_rates] = now - start;
                rate_y[n_rates++] = (r->n_decode - window_start_count) / (now - window_start);
                window_start = now;
                window_start_count = r->n_decode;
            }
        }
    }
    r->decode_s = prev - start;
    e0_energy_read(en1);
    e0_ctx_enable_timing(c, false);
    r->st = *e0_ctx_get_stats(c);
    if (xc) r->xs = *e0_experts_get_stats(xc);
    if (sustained) {
        r->sustained_s = r->decode_s;
        r->sustained_tps = r->n_decode / r->decode_s;
        r->sustained_slope = n_rates >= 2 ? e0_slope(rate_t, rate_y, (size_t)n_rates) * 60.0 : 0;
        json_t *ts = json_array(), *ys = json_array();
        for (int i = 0; i < n_rates; i++) json_array_append_new(ts, json_real(rate_t[i])), json_array_append_new(ys, json_real(rate_y[i]));
        json_decref(r->sustained_series);
        r->sustained_series = json_pack("{s:f, s:o, s:o}", "interval_s", 1.0, "t_s", ts, "tokens_per_second", ys);
    }
    free(rate_t);
    free(rate_y);
    return 0;
}

/* The prompt into each of the B contexts cs, batched (the harness's "N prompts as one batched
 * forward"): steps of e0_eval_multi, each sequence chunked as e0_eval alone chunks it (n_batch
 * tokens from the start, the last shorter, so each gets the bits it would alone), as many
 * sequences' next chunks a step as fit in n_batch (at least one). */
static int prefill_batch(e0_ctx *const *cs, int B, const int *const *prompts, int n_prompt, e0_err *e) {
    const int nb = e0_ctx_n_batch(cs[0]);
    int *done = calloc((size_t)B, sizeof *done), *cnt = malloc((size_t)B * sizeof *cnt), *who = malloc((size_t)B * sizeof *who);
    const int **toks = malloc((size_t)B * sizeof *toks);
    e0_ctx **step = malloc((size_t)B * sizeof *step);
    int rc = 0;
    if (!done || !cnt || !who || !toks || !step) rc = e0_fail(e, "out of memory");
    for (int next = 0; rc == 0 && next < B;) {
        int n = 0, rows = 0; /* step k: sequence who[k]'s next cnt[k] tokens */
        for (int b = next; b < B; b++) {
            const int rem = n_prompt - done[b], chunk = rem < nb ? rem : nb;
            if (rem == 0) continue;
            if (n > 0 && rows + chunk > nb) break;
            who[n] = b, step[n] = cs[b], toks[n] = prompts[b] + done[b], cnt[n++] = chunk;
            rows += chunk;
        }
        rc = e0_eval_multi(step, toks, cnt, NULL, n, e) < 0 ? -1 : 0;
        for (int k = 0; k < n; k++) done[who[k]] += cnt[k];
        while (next < B && done[next] == n_prompt) next++;
    }
    free(done);
    free(cnt);
    free(who);
    free(toks);
    free(step);
    return rc;
}

/* --batch-size B: prompts[b] prefilled into context cs[b] (cs[0] the session's; one batched
 * forward a step, prefill_batch; all n_prompt long), then
 * --warmup untimed and --ntok timed lockstep steps, each one e0_eval_batch over the B sequences.
 * r->n_decode = timed steps, itl = step times, st = cs[0]'s phase times (the batch's scratch) with
 * the tokens of all B. */
static int run_batch(e0_ctx *const *cs, int B, e0_experts *xc, const bench_args *a, const int *const *prompts, int n_prompt,
                     run_result *r, e0_energy_reading *en0, e0_energy_reading *en1, e0_err *e) {
    const int64_t V = e0_ctx_model(cs[0])->hp.n_vocab;
    int *tok = malloc((size_t)B * sizeof *tok);
    if (!tok) return e0_fail(e, "out of memory");
    int rc = -1;
    double t0 = e0_now(), start = t0, prev = t0;
    /* --breakdown: every context times the forward passes it leads (a step's first sequence's) */
    for (int b = 0; b < B; b++) e0_ctx_truncate(cs[b], 0), e0_ctx_reset_stats(cs[b]), e0_ctx_enable_timing(cs[b], a->breakdown);
    if (prefill_batch(cs, B, prompts, n_prompt, e) < 0) goto done;
    for (int b = 0; b < B; b++) tok[b] = e0_argmax(e0_ctx_logits(cs[b]), V);
    r->prefill_s = e0_now() - t0;
    memset(&r->pst, 0, sizeof r->pst);
    for (int b = 0; b < B; b++) {
        const e0_ctx_stats *p = e0_ctx_get_stats(cs[b]);
        r->pst.attention += p->attention, r->pst.router += p->router, r->pst.experts += p->experts;
        r->pst.expert_wait += p->expert_wait, r->pst.ffn_dense += p->ffn_dense, r->pst.output += p->output;
        r->pst.tokens += p->tokens;
        if (b > 0) e0_ctx_enable_timing(cs[b], false); /* decode steps are led by cs[0] */
    }
    r->agree = true;
    r->n_decode = 0;
    for (int64_t k = 0; k < a->warmup + a->ntok; k++) {
        if (k == a->warmup) {
            for (int b = 0; b < B; b++) e0_ctx_reset_stats(cs[b]);
            if (xc) e0_experts_reset_stats(xc);
            e0_ctx_enable_timing(cs[0], a->breakdown);
            e0_energy_read(en0);
            start = prev = e0_now();
        }
        if (e0_ctx_pos(cs[0]) + 1 > e0_ctx_n_ctx(cs[0])) {
            e0_fail(e, "context full after %d tokens (raise --context)", e0_ctx_pos(cs[0]));
            goto done;
        }
        if (e0_eval_batch(cs, tok, B, e) < 0) goto done;
        double ts = e0_now();
        for (int b = 0; b < B; b++) {
            tok[b] = e0_argmax(e0_ctx_logits(cs[b]), V);
            r->agree &= tok[b] == tok[0];
        }
        if (k < a->warmup) continue;
        double now = e0_now();
        if (a->breakdown) r->sampling_s += now - ts;
        r->itl[r->n_decode++] = now - prev;
        prev = now;
    }
    r->decode_s = prev - start;
    e0_energy_read(en1);
    e0_ctx_enable_timing(cs[0], false);
    r->st = *e0_ctx_get_stats(cs[0]);
    r->st.tokens = 0;
    for (int b = 0; b < B; b++) r->st.tokens += e0_ctx_get_stats(cs[b])->tokens;
    if (xc) r->xs = *e0_experts_get_stats(xc);
    rc = 0;
done:
    free(tok);
    return rc;
}

/* --batch-size B: the contexts of sequences 1 .. B-1, configured as the session's (as serve's
 * slots are, sched.c); cs[0] is the session's. NULL on error (e filled). */
static e0_ctx **batch_contexts(const e0_session *ses, int B, e0_err *e) {
    e0_ctx **cs = calloc((size_t)B, sizeof *cs);
    if (!cs) return e0_fail(e, "out of memory"), NULL;
    const e0_ctx *c = ses->c;
    e0_ctx_params cp = {.n_ctx = e0_ctx_n_ctx(c), .n_threads = e0_ctx_n_threads(c), .n_threads_prefill = e0_ctx_n_threads_prefill(c),
                        .n_batch = e0_ctx_n_batch(c) > B ? e0_ctx_n_batch(c) : B, .type_k = e0_ctx_type_k(c), .type_v = e0_ctx_type_v(c)};
    /* the sequences are evaluated one at a time (prefill) or as one batch in cs[0]'s buffers:
     * they share its scratch where the shapes agree (not when B > its n_batch) */
    if (cp.n_batch == e0_ctx_n_batch(c)) cp.scratch_owner = c;
    cs[0] = ses->c;
    for (int b = 1; b < B; b++) {
        /* one set of thread pools for the whole batch, as serve's slots (sched.c) */
        if (!(cs[b] = e0_ctx_new(ses->m, &cp, e)) || e0_ctx_share_threads(cs[b], ses->c, e) < 0) {
            if (cs[b]) e0_ctx_free(cs[b]);
            while (--b > 0) e0_ctx_free(cs[b]);
            free(cs);
            return NULL;
        }
        e0_session_setup_ctx(ses, cs[b], b, B);
    }
    return cs;
}

/* The streaming accounting of the timed decode steps. */
static json_t *io_json(const e0_session *ses, const run_result *r) {
    json_t *io = json_object();
    const e0_model *m = ses->m;
    json_object_set_new(io, "experts", json_string(!m->hp.n_expert ? "none (dense model)" : ses->streamed ? "stream" : "resident"));
    double per = r->n_decode ? 1.0 / r->n_decode : 0;
    if (ses->xc) {
        const e0_experts_stats *x = &r->xs;
        json_object_set_new(io, "bytes_read", json_integer((json_int_t)x->bytes_read));
        json_object_set_new(io, "bytes_read_per_token", json_real((double)x->bytes_read * per));
        json_object_set_new(io, "bytes_device", json_integer((json_int_t)x->bytes_device));
        json_object_set_new(io, "reads", json_integer((json_int_t)x->reads));
        json_object_set_new(io, "reads_per_token", json_real((double)x->reads * per));
        json_object_set_new(io, "cache_requests", json_integer((json_int_t)x->requests));
        json_object_set_new(io, "cache_hits", json_integer((json_int_t)x->hits));
        json_object_set_new(io, "cache_misses", json_integer((json_int_t)x->misses));
        json_object_set_new(io, "cache_hit_rate", x->requests ? json_real((double)x->hits / (double)x->requests)
                                                              : e0_unavailable("no expert requests"));
        json_object_set_new(io, "prefetched", json_integer((json_int_t)x->prefetched));
        json_object_set_new(io, "prefetch_hits", json_integer((json_int_t)x->prefetch_hits));
        json_object_set_new(io, "evictions", json_integer((json_int_t)x->evictions));
        json_object_set_new(io, "wait_seconds", json_real(x->wait_seconds));
        json_object_set_new(io, "wait_seconds_per_token", json_real(x->wait_seconds * per));
    } else {
        json_object_set_new(io, "bytes_read", json_integer(0));
        json_object_set_new(io, "note", json_string("no expert streaming: every weight is resident"));
    }
    uint64_t hits = 0, total = 0;
    json_t *layers = json_array();
    for (int64_t il = 0; il < m->hp.n_layer && m->hp.n_expert; il++) {
        uint64_t h, t;
        e0_ctx_prediction_stats(ses->c, (int)il, &h, &t);
        hits += h;
        total += t;
        json_array_append_new(layers, t ? json_real((double)h / (double)t) : json_null());
    }
    json_object_set_new(io, "prediction_hit_rate", total ? json_real((double)hits / (double)total)
                                                         : e0_unavailable("no predictions (actual routing without prefetch, or a dense model)"));
    json_object_set_new(io, "prediction_hit_rate_per_layer", layers);
    return io;
}

int cmd_bench(int argc, char **argv) {
    if (cmd_bench_is_llama_style(argc, argv)) return cmd_bench_llama(argc, argv);
    bench_args a = {.warmup = 10, .ntok = 100, .runs = 1, .mode = "single", .duration = 60};
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    e0_err e;
    char prompt_path[PATH_MAX + 64];
    char *text = a.tokens_file   ? e0_read_file(a.tokens_file, 64 << 20, NULL, &e)
                 : a.user_file     ? e0_read_file(a.user_file, 16 << 20, NULL, &e)
                 : a.prompt_text ? strdup(a.prompt_text)
                                 : read_fixture(fixture_for(a.prompt_name ? a.prompt_name : "medium"), prompt_path,
                                                sizeof prompt_path, &e);
    if (a.user_file) snprintf(prompt_path, sizeof prompt_path, "%s", a.user_file);
    if (a.tokens_file) snprintf(prompt_path, sizeof prompt_path, "%s", a.tokens_file);
    if (a.prompt_text) snprintf(prompt_path, sizeof prompt_path, "(--prompt-text)");
    if (a.prompt_text && !text) e0_fail(&e, "out of memory");
    if (!text) return cli_error("bench: %s", e.msg);
    json_t *system_at_start = e0_system_json();

    /* Without -c the context is sized to the run (prompt + warm-up + timed steps) when that is
     * more than the default 4096: the prompt's length is known from a weightless load of the
     * model (its tokenizer and template), so `bench --prompt long` runs as it is. */
    int min_ctx = 0;
    if (!a.o.n_ctx) {
        const int64_t steps = a.warmup + a.ntok + 1;
        e0_prompt probe_pr = {0};
        e0_model *probe = a.tokens_file || !a.o.model ? NULL : e0_model_load(a.o.model, NULL, false, &e);
        if (a.tokens_file) { /* the ids themselves: counted, not kept */
            if (cli_parse_ids(a.tokens_file, text, &probe_pr.ids, &probe_pr.n, &e) == 0) min_ctx = probe_pr.n;
            free(probe_pr.ids);
        } else if (probe && e0_prompt_build(probe, text, a.raw, &probe_pr, &e) == 0) {
            min_ctx = probe_pr.n;
            e0_prompt_free(&probe_pr);
        }
        if (probe) e0_model_free(probe);
        /* (a failure here is reported by the real load and tokenization below) */
        if (min_ctx > 0) min_ctx = (int)(min_ctx + steps < INT32_MAX ? min_ctx + steps : INT32_MAX);
    }
    e0_model *m;
    e0_ctx *c;
    double load0 = e0_now();
    if (cli_load_ex(&a.o, min_ctx, (int)a.prefill_threads, &m, &c)) return free(text), json_decref(system_at_start), 1;
    double load_s = e0_now() - load0;
    e0_prompt pr = {0};
    if (a.tokens_file ? cli_parse_ids(a.tokens_file, text, &pr.ids, &pr.n, &e) < 0 || (pr.n == 0 && e0_fail(&e, "%s: no token ids", a.tokens_file))
                      : e0_prompt_build(m, text, a.raw, &pr, &e) < 0) {
        cli_unload(&a.o);
        free(text);
        json_decref(system_at_start);
        return cli_error("bench: %s", e.msg);
    }
    free(text);
    int status = 0;
    if (!strcmp(a.mode, "single") && (int64_t)pr.n + a.warmup + a.ntok > e0_ctx_n_ctx(c)) /* sustained mode wraps */
        status = cli_error("bench: the prompt (%d tokens) + %lld warm-up + %lld timed steps need %lld tokens of context; the "
                           "context is %d%s (-c N sets it)",
                           pr.n, (long long)a.warmup, (long long)a.ntok, (long long)pr.n + a.warmup + a.ntok, e0_ctx_n_ctx(c),
                           a.o.n_ctx ? "" : ", the model's trained length or 4096");
    json_t *model_json = e0_model_json(m->gguf->path, m->hp.arch_name, tensor_types_json(m->gguf), m->params_total,
                                       m->params_active, &e);
    if (!model_json) model_json = e0_unavailable("%s", e.msg);
    else if (m->gguf->n_splits > 1) add_split_files(model_json, m->gguf);
    run_result r = {0};
    const int B = a.batch_size ? (int)a.batch_size : 1;
    e0_ctx **cs = NULL;
    if (a.batch_size && !(cs = batch_contexts(&a.o.session, B, &e))) status = cli_error("bench: --batch-size %d: %s", B, e.msg);
    /* the batch's prompts: B copies, or (--batch-distinct) sequence b's rotated left by b * n / B */
    const int **prompts = cs ? malloc((size_t)B * sizeof *prompts) : NULL;
    int *rotated = cs && a.batch_distinct ? malloc((size_t)B * (size_t)pr.n * sizeof *rotated) : NULL;
    if (cs && (!prompts || (a.batch_distinct && !rotated))) status = status ? status : cli_error("bench: out of memory");
    if (rotated && pr.n < B)
        fprintf(stderr, "bench: warning: --batch-distinct with %d sequences but a prompt of %d tokens: %d of the "
                        "prompts repeat others\n", B, pr.n, B - pr.n);
    for (int b = 0; prompts && b < B; b++) {
        prompts[b] = pr.ids;
        if (!rotated) continue;
        const int shift = (int)((int64_t)b * pr.n / B);
        int *dst = rotated + (size_t)b * (size_t)pr.n;
        for (int i = 0; i < pr.n; i++) dst[i] = pr.ids[(i + shift) % pr.n];
        prompts[b] = dst;
    }
    if (B > e0_ctx_n_batch(c))
        status = status ? status : cli_error("bench: --batch-size %d > the prefill chunk -b %d of the first sequence", B, e0_ctx_n_batch(c));
    r.itl = malloc((size_t)a.ntok * sizeof(double));
    double *pp = malloc((size_t)a.runs * sizeof *pp), *tg = malloc((size_t)a.runs * sizeof *tg);
    int n_done = 0;
    if (!r.itl || !pp || !tg) status = cli_error("bench: out of memory");
    for (int64_t run = 0; run < a.runs && !status; run++) {
        e0_energy_reading en0, en1;
        double *itl = r.itl;
        memset(&r, 0, sizeof r);
        r.itl = itl;
        if (cs ? run_batch(cs, B, a.o.session.xc, &a, prompts, pr.n, &r, &en0, &en1, &e) < 0
               : run_once(c, a.o.session.xc, &a, pr.ids, pr.n, &r, &en0, &en1, &e) < 0) {
            status = cli_error("bench: %s", e.msg);
            break;
        }
        int n_itl = r.n_decode < a.ntok ? r.n_decode : (int)a.ntok;
        pp[n_done] = (double)B * pr.n / r.prefill_s;
        tg[n_done++] = (double)B * r.n_decode / r.decode_s; /* aggregate over the B sequences */
        json_t *row = json_object();
        json_object_set_new(row, "run", json_integer(run + 1));
        json_object_set_new(row, "mode", json_string(a.mode));
        json_object_set_new(row, "prompt_file", json_string(prompt_path));
        json_object_set_new(row, "chat_template", json_boolean(pr.templated));
        json_object_set_new(row, "load_seconds", json_real(load_s));
        json_object_set_new(row, "prefill_seconds", json_real(r.prefill_s));
        json_object_set_new(row, "prefill_tokens_per_second", json_real((double)B * pr.n / r.prefill_s));
        json_object_set_new(row, "decode_tokens_per_second", json_real((double)B * r.n_decode / r.decode_s));
        json_object_set_new(row, "batch_size", json_integer(B));
        json_object_set_new(row, "per_sequence_decode_tokens_per_second", json_real(r.n_decode / r.decode_s));
        /* under replay the sequences replay different trace steps, and distinct prompts decode
         * differently: their ids need not agree */
        const bool replay = a.o.session.opt.routing == E0_ROUTING_REPLAY, differ = replay || a.batch_distinct;
        if (cs) json_object_set_new(row, "batch_sequences_agree", differ ? json_null() : json_boolean(r.agree));
        if (cs) json_object_set_new(row, "batch_prompts", json_string(a.batch_distinct ? "distinct" : "copies"));
        /* after the timed steps, with every pool alive: the main thread and the pools' workers */
        json_object_set_new(row, "process_threads", e0_process_threads_json());
        json_object_set_new(row, "n_prompt", json_integer(pr.n));
        json_object_set_new(row, "n_decode", json_integer(r.n_decode));
        json_object_set_new(row, "n_warmup", json_integer(a.warmup));
        /* bytes one timed decode step reads, at the mean KV length of the timed steps */
        int64_t mean_kv = pr.n + a.warmup + (r.n_decode < a.ntok ? r.n_decode : a.ntok) / 2;
        uint64_t kv_pos = e0_kv_bytes_per_pos(&m->hp, e0_ctx_type_k(c), e0_ctx_type_v(c));
        /* hybrid models also read and write their recurrent state once per step */
        json_object_set_new(row, "bytes_per_token",
                            json_integer((json_int_t)(e0_model_decode_bytes(m, mean_kv, kv_pos) + 2 * e0_ctx_recurrent_bytes(c))));
        json_object_set_new(row, "kv_cache_bytes", json_integer((json_int_t)(B * e0_ctx_kv_bytes(c))));
        if (e0_ctx_recurrent_bytes(c))
            json_object_set_new(row, "recurrent_state_bytes", json_integer((json_int_t)e0_ctx_recurrent_bytes(c)));
        json_object_set_new(row, "itl", e0_distribution_json(r.itl, (size_t)n_itl));
        if (!strcmp(a.mode, "sustained")) {
            json_t *s = json_object();
            json_object_set_new(s, "seconds", json_real(r.sustained_s));
            json_object_set_new(s, "mean_tokens_per_second", json_real(r.sustained_tps));
            json_object_set_new(s, "slope_tokens_per_second_per_minute", json_real(r.sustained_slope));
            if (r.sustained_series) json_object_set(s, "series", r.sustained_series); /* per interval */
            json_object_set_new(row, "sustained", s);
        }
        json_object_set_new(row, "memory", e0_memory_json());
        json_object_set_new(row, "io", io_json(&a.o.session, &r));
        json_t *cfg = e0_session_config_json(&a.o.session);
        json_object_set_new(cfg, "sampling", json_string("greedy"));
        json_object_set_new(cfg, "seed", json_string("none (greedy)"));
        json_object_set_new(cfg, "chat_template", json_boolean(pr.templated));
        json_object_set_new(cfg, "warmup", json_integer(a.warmup));
        json_object_set_new(cfg, "ntok", json_integer(a.ntok));
        json_object_set_new(row, "config", cfg);
        json_object_set_new(row, "memory_budget", e0_session_budget_json(&a.o.session));
        json_object_set_new(row, "engine", e0_engine_json(e0_simd_name(e0_simd_level())));
        json_object_set_new(row, "model", json_deep_copy(model_json));
        json_object_set_new(row, "system", json_deep_copy(system_at_start));
        json_object_set_new(row, "energy", e0_energy_json(&en0, &en1, r.n_decode));
        if (a.breakdown) {
            double per = 1.0 / (r.n_decode ? r.n_decode : 1);
            json_t *b = json_object();
            json_object_set_new(b, "attention_seconds_per_token", json_real(r.st.attention * per));
            json_object_set_new(b, "router_seconds_per_token", json_real(r.st.router * per));
            json_object_set_new(b, "expert_compute_seconds_per_token", json_real(r.st.experts * per));
            json_object_set_new(b, "dense_ffn_seconds_per_token", json_real(r.st.ffn_dense * per));
            json_object_set_new(b, "expert_wait_seconds_per_token", json_real(r.st.expert_wait * per));
            json_object_set_new(b, "output_seconds_per_token", json_real(r.st.output * per));
            json_object_set_new(b, "sampling_seconds_per_token", json_real(r.sampling_s * per));
            json_object_set_new(b, "total_seconds_per_token", json_real(r.decode_s * per));
            if (r.st.moe_passes) { /* the routed experts computed: a batch's union once per layer */
                const double compute = r.st.experts - r.st.expert_wait;
                json_object_set_new(b, "experts_per_moe_pass", json_real((double)r.st.experts_computed / (double)r.st.moe_passes));
                json_object_set_new(b, "expert_bytes_per_token", json_real((double)r.st.expert_bytes_computed * per));
                json_object_set_new(b, "expert_compute_gb_per_second",
                                    json_real(compute > 0 ? (double)r.st.expert_bytes_computed / compute / 1e9 : 0));
            }
            json_object_set_new(row, "breakdown", b);
            { /* prefill: whole-prompt seconds per part (other: norms, residuals, quantizing inputs; a batch: all B prompts) */
                const e0_ctx_stats *p = &r.pst;
                const double parts = p->attention + p->router + p->experts + p->ffn_dense + p->output; /* experts include the wait */
                json_t *pb = json_object();
                json_object_set_new(pb, "attention_seconds", json_real(p->attention));
                json_object_set_new(pb, "router_seconds", json_real(p->router));
                json_object_set_new(pb, "expert_compute_seconds", json_real(p->experts));
                json_object_set_new(pb, "dense_ffn_seconds", json_real(p->ffn_dense));
                json_object_set_new(pb, "expert_wait_seconds", json_real(p->expert_wait));
                json_object_set_new(pb, "output_seconds", json_real(p->output));
                json_object_set_new(pb, "other_seconds", json_real(r.prefill_s > parts ? r.prefill_s - parts : 0));
                json_object_set_new(pb, "total_seconds", json_real(r.prefill_s));
                json_object_set_new(row, "prefill_breakdown", pb);
            }
        }
        char *line = json_dumps(row, JSON_COMPACT);
        if (line) printf("%s\n", line);
        bool written = cli_stdout_ok();
        free(line);
        json_decref(row);
        if (!written) break; /* the row is lost: main reports it (or the reader went away) */
        char routing[512];
        if (cs) fprintf(stderr, "batch of %d sequences: %.2f tok/s aggregate, %.2f per sequence%s\n", B, tg[n_done - 1],
                        r.n_decode / r.decode_s, r.agree || differ ? "" : " (warning: the sequences' ids differ)");
        fprintf(stderr, "run %lld: %d prompt tokens, first token %.3f s (%.1f tok/s prefill), %d decode steps %.2f tok/s%s%s\n",
                (long long)(run + 1), pr.n, r.prefill_s, pp[n_done - 1], r.n_decode, tg[n_done - 1],
                a.o.session.trace ? " | routing: " : "",
                a.o.session.trace ? e0_session_routing_label(&a.o.session, routing, sizeof routing) : "");
    }
    if (n_done > 1) {
        /* the aggregate over --runs: medians and ranges, as docs/perf.md quotes them */
        e0_summary sp, sd;
        if (e0_summarize(pp, (size_t)n_done, &sp) == 0 && e0_summarize(tg, (size_t)n_done, &sd) == 0)
            fprintf(stderr, "%d runs: prefill median %.1f tok/s (range %.1f-%.1f), decode median %.2f tok/s (range %.2f-%.2f)\n",
                    n_done, sp.median, sp.min, sp.max, sd.median, sd.min, sd.max);
    }
    free(pp);
    free(tg);
    free(r.itl);
    free(prompts);
    free(rotated);
    json_decref(r.sustained_series);
    for (int b = 1; cs && b < B; b++) e0_ctx_free(cs[b]);
    free(cs);
    json_decref(model_json);
    json_decref(system_at_start);
    e0_prompt_free(&pr);
    cli_unload(&a.o);
    return status;
}
