/* sched.c — slots, the request queue and the worker thread (see sched.h). One mutex guards the
 * queue, the slots' assignment and every request's shared fields; the worker drops it while it
 * evaluates (step.c) and samples, so HTTP threads can submit and read meanwhile. */
#include "serve/sched.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "serve/output.h"
#include "serve/step.h"

enum { REQ_QUEUED, REQ_RUNNING, REQ_DONE };

/* srv_req objects alive in this process (one scheduler per process): /metrics shows it, so a
 * load test can tell that every request was freed. */
static _Atomic int64_t n_live_reqs;

struct srv_req {
    /* input: immutable after srv_submit */
    int *prompt;
    int n_prompt;
    srv_params p;
    /* shared, under srv_sched.mu */
    int refs;
    int state;
    srv_finish cancel;    /* != NONE: asked to stop for this reason */
    e0_strbuf text;       /* visible text so far */
    int *ids;             /* generated ids [n_gen] (capacity cap_gen) */
    srv_lp *lp;           /* [n_lp] when logprobs are asked for */
    int n_gen, n_lp, cap_gen;
    int n_cached;         /* prompt tokens reused from the slot's cache */
    srv_finish finish;
    char err[256];
    pthread_cond_t cv;    /* signalled on new output and at the end */
    srv_req *next;        /* queue link */
};

/* A sequence slot; everything but `r` is the worker's alone. */
typedef struct slot {
    e0_ctx *c;
    bool own_ctx;         /* made here (slot 0 uses the session's) */
    int *cached;          /* [n_ctx] the tokens the KV cache holds */
    int n_cached;
    srv_req *r;           /* the running request, or NULL (free) */
    int n_done;           /* prompt tokens evaluated */
    int next;             /* the last sampled token, fed at the next step */
    e0_sampler *smp;
    e0_gsampler *gs;      /* the request's grammar (NULL: none) */
    e0_detok_stream ds;
    e0_strbuf gen;        /* generated text before stop strings are cut */
    size_t released;      /* bytes of gen published to r->text */
    uint64_t last_used;   /* step of its last request's admission, for the choice of slot */
} slot;

struct srv_sched {
    e0_session *ses;
    const e0_tokenizer *tok;
    int64_t n_vocab;
    int n_ctx, n_batch, n_slots, max_queue;
    int prefill_budget;   /* prompt tokens a step takes while sequences decode (<= n_batch) */
    slot *slots;
    pthread_mutex_t mu;
    pthread_cond_t work;  /* the worker waits here for requests */
    pthread_cond_t idle;  /* srv_drain waits here for the last sequence */
    srv_req *q_head, *q_tail;
    int q_len, active;
    bool stop, draining;
    double drain_deadline;
    int rr;               /* round-robin start for the next prefill chunk */
    uint64_t admissions;
    srv_stats st;         /* counters (under mu) */
    pthread_t worker;
    bool worker_started;
    srv_item *items;      /* [n_slots] the step being built */
};

srv_req *srv_req_new(const int *ids, int n, const srv_params *p) {
    srv_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof *r->prompt);
    if (!r->prompt || pthread_cond_init(&r->cv, NULL) != 0) {
        free(r->prompt);
        free(r);
        return NULL;
    }
    if (n > 0) memcpy(r->prompt, ids, (size_t)n * sizeof *ids);
    r->n_prompt = n;
    r->p = *p;
    r->refs = 1;
    atomic_fetch_add(&n_live_reqs, 1);
    return r;
}

static void req_free(srv_req *r) {
    for (int i = 0; i < r->p.n_stop; i++) free(r->p.stop[i]);
    e0_grammar_free(r->p.grammar);
    free(r->prompt);
    free(r->text.p);
    free(r->ids);
    free(r->lp);
    pthread_cond_destroy(&r->cv);
    free(r);
    atomic_fetch_sub(&n_live_reqs, 1);
}

/* Under mu. */
static void unref(srv_req *r) {
    if (--r->refs == 0) req_free(r);
}

void srv_release(srv_sched *s, srv_req *r) {
    if (!r) return;
    pthread_mutex_lock(&s->mu);
    unref(r);
    pthread_mutex_unlock(&s->mu);
}

/* Under mu: r is finished (queued or running). */
static void finish_locked(srv_sched *s, srv_req *r, srv_finish why, const char *err) {
    r->state = REQ_DONE;
    r->finish = why;
    if (err) snprintf(r->err, sizeof r->err, "%s", err);
    s->st.requests_done++;
    if (why == SRV_FINISH_CANCELLED) s->st.requests_cancelled++;
    if (why == SRV_FINISH_TIMEOUT) s->st.requests_timeout++;
    if (why == SRV_FINISH_ERROR) s->st.requests_error++;
    pthread_cond_broadcast(&r->cv);
}

int srv_submit(srv_sched *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    int rc = SRV_OK;
    if (s->draining || s->stop) rc = SRV_DRAINING;
    else if (s->q_len - (s->n_slots - s->active) >= s->max_queue) rc = SRV_QUEUE_FULL; /* free slots take some at once */
    else {
        r->refs++;
        r->state = REQ_QUEUED;
        r->next = NULL;
        if (s->q_tail) s->q_tail->next = r;
        else s->q_head = r;
        s->q_tail = r;
        s->q_len++;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void srv_cancel(srv_sched *s, srv_req *r, srv_finish why) {
    pthread_mutex_lock(&s->mu);
    if (r->state != REQ_DONE && r->cancel == SRV_FINISH_NONE) {
        r->cancel = why;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
}

int srv_wait(srv_sched *s, srv_req *r, srv_cursor *cur, int timeout_ms, srv_update *u) {
    memset(u, 0, sizeof *u);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&s->mu);
    while (r->state != REQ_DONE && r->text.len == cur->text && r->n_gen == cur->ids)
        if (pthread_cond_timedwait(&r->cv, &s->mu, &ts) == ETIMEDOUT) break;
    bool any = r->state == REQ_DONE || r->text.len > cur->text || r->n_gen > cur->ids;
    int rc = any ? 1 : 0;
    if (any) {
        size_t nt = r->text.len - cur->text;
        int ni = r->n_gen - cur->ids, nl = r->n_lp - cur->lp;
        u->text = malloc(nt + 1);
        u->ids = malloc((size_t)(ni > 0 ? ni : 1) * sizeof *u->ids);
        u->lp = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *u->lp);
        if (!u->text || !u->ids || !u->lp) {
            srv_update_free(u);
            rc = -1;
        } else {
            if (nt) memcpy(u->text, r->text.p + cur->text, nt);
            u->text[nt] = 0;
            u->text_len = nt;
            if (ni) memcpy(u->ids, r->ids + cur->ids, (size_t)ni * sizeof *u->ids);
            if (nl) memcpy(u->lp, r->lp + cur->lp, (size_t)nl * sizeof *u->lp);
            u->n_ids = ni;
            u->n_lp = nl;
            cur->text = r->text.len;
            cur->ids = r->n_gen;
            cur->lp = r->n_lp;
            u->done = r->state == REQ_DONE;
            u->finish = r->finish;
            memcpy(u->err, r->err, sizeof u->err);
        }
    }
    u->n_prompt = r->n_prompt;
    u->n_cached = r->n_cached;
    u->n_gen = r->n_gen;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void srv_update_free(srv_update *u) {
    free(u->text);
    free(u->ids);
    free(u->lp);
    u->text = NULL;
    u->ids = NULL;
    u->lp = NULL;
}

/* ---- the worker ---- */

/* Under mu: the slot's request is over; the slot becomes free (its cache stays). */
static void slot_end(srv_sched *s, slot *sl, srv_finish why, const char *err) {
    finish_locked(s, sl->r, why, err);
    unref(sl->r);
    sl->r = NULL;
    e0_sampler_free(sl->smp);
    sl->smp = NULL;
    e0_gsampler_free(sl->gs);
    sl->gs = NULL;
    e0_detok_free(&sl->ds);
    free(sl->gen.p);
    memset(&sl->gen, 0, sizeof sl->gen);
    s->active--;
    if (s->active == 0) pthread_cond_broadcast(&s->idle);
}

/* Under mu: the free slot for prompt r (longest common prefix with its cache, then the least
 * recently used), or NULL. *lcp = the shared prefix. */
static slot *pick_slot(srv_sched *s, const srv_req *r, int *lcp) {
    slot *best = NULL;
    int best_l = -1;
    for (int i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (sl->r) continue;
        int l = 0;
        while (l < sl->n_cached && l < r->n_prompt && sl->cached[l] == r->prompt[l]) l++;
        if (l > best_l || (l == best_l && sl->last_used < best->last_used)) best = sl, best_l = l;
    }
    *lcp = best_l;
    return best;
}

/* How many of a prompt's next tokens a step takes, given room for `room` (1 .. n_batch) more: as
 * many as fit. Any cut gives the prompt the bits it gets alone, in one e0_eval: prompt tokens
 * are routed exactly however they are grouped (engine.h; test_batch's chunking). */
static int prompt_piece(const slot *sl, int room) {
    const int rem = sl->r->n_prompt - sl->n_done;
    return rem < room ? rem : room;
}

/* Under mu: r starts in sl. 0, or -1 when out of memory (r is then finished with an error). */
static int slot_start(srv_sched *s, slot *sl, srv_req *r, int lcp) {
    /* keep at least one prompt token to evaluate, so that there are fresh logits */
    int keep = lcp < r->n_prompt - 1 ? lcp : r->n_prompt - 1;
    if (keep < 0 || r->p.no_cache) keep = 0;
    sl->r = r;
    s->active++;
    r->state = REQ_RUNNING;
    r->n_cached = keep;
    sl->last_used = ++s->admissions;
    e0_ctx_truncate(sl->c, keep);
    sl->n_cached = keep;
    sl->n_done = keep;
    sl->released = 0;
    memset(&sl->gen, 0, sizeof sl->gen);
    e0_detok_init(&sl->ds, s->tok, false, false);
    sl->smp = e0_sampler_new(&r->p.sp, s->n_vocab);
    if (!sl->smp) {
        slot_end(s, sl, SRV_FINISH_ERROR, "out of memory");
        return -1;
    }
    e0_err e = {0};
    if (r->p.grammar && !(sl->gs = e0_gsampler_new(r->p.grammar, s->tok, s->n_vocab, &e))) {
        slot_end(s, sl, SRV_FINISH_ERROR, e.msg);
        return -1;
    }
    for (int i = 0; i < r->n_prompt; i++) e0_sampler_accept(sl->smp, r->prompt[i]);
    s->st.prompt_tokens += (uint64_t)r->n_prompt;
    s->st.cached_tokens += (uint64_t)keep;
    return 0;
}

/* Worker, without mu: sl's logits are current; sample (under the request's grammar), detokenize,
 * cut stop strings. Returns the finish reason (NONE: go on, sl->next is the token to feed next).
 * The new output is left in sl (gen, released) and *id / *lp for publish(); *failed: nothing to
 * publish (err says why: out of memory, or the grammar found no token). */
static srv_finish sample_one(srv_sched *s, slot *sl, int *id, srv_lp *lp, bool *has_lp, bool *failed, char *err,
                             size_t errcap) {
    const srv_req *r = sl->r;
    const float *logits = e0_ctx_logits(sl->c);
    int t;
    if (sl->gs) {
        e0_err e = {0};
        if ((t = e0_gsampler_sample(sl->gs, sl->smp, logits, &e)) < 0) {
            snprintf(err, errcap, "%.250s", e.msg);
            return *failed = true, SRV_FINISH_ERROR;
        }
        e0_gsampler_accept(sl->gs, t);
    } else t = e0_sample(sl->smp, logits);
    if (t < 0 || (int64_t)t >= s->n_vocab) t = (int)(s->n_vocab - 1);
    e0_sampler_accept(sl->smp, t);
    *id = t;
    *has_lp = r->p.top_logprobs >= 0;
    if (*has_lp) srv_logprobs(logits, s->n_vocab, t, r->p.top_logprobs, lp);
    bool eog = !r->p.ignore_eos && e0_tok_is_eog(s->tok, t);
    size_t n;
    if (!eog) {
        const char *piece = e0_detok_push(&sl->ds, t, &n);
        if (!piece || e0_sb_add(&sl->gen, piece, n) < 0) return *failed = true, SRV_FINISH_ERROR;
    }
    int n_gen = r->n_gen + 1; /* with this token (only the worker writes r->n_gen) */
    const bool complete = sl->gs && e0_gsampler_must_end(sl->gs); /* the grammar allows nothing more */
    bool last = eog || complete || (r->p.max_tokens >= 0 && n_gen >= r->p.max_tokens) || e0_ctx_pos(sl->c) >= s->n_ctx;
    if (last) { /* whatever the detokenizer still holds belongs to the output */
        const char *tail = e0_detok_flush(&sl->ds, &n);
        if (tail && n && e0_sb_add(&sl->gen, tail, n) < 0) return *failed = true, SRV_FINISH_ERROR;
    }
    long stop_at;
    size_t upto = srv_stop_scan(sl->gen.p ? sl->gen.p : "", sl->gen.len, sl->released, r->p.stop, r->p.n_stop, &stop_at);
    if (upto > sl->released) sl->released = upto;
    if (stop_at >= 0) {
        sl->gen.len = (size_t)stop_at;
        return SRV_FINISH_STOP;
    }
    if (last) {
        sl->released = sl->gen.len; /* a held-back tail that never became a stop string */
        return eog || complete ? SRV_FINISH_STOP : SRV_FINISH_LENGTH;
    }
    sl->next = t;
    return SRV_FINISH_NONE;
}

/* Under mu: make the slot's new output visible to the request. */
static int publish(srv_sched *s, slot *sl, int id, const srv_lp *lp, bool has_lp) {
    srv_req *r = sl->r;
    if (r->n_gen == r->cap_gen) {
        int cap = r->cap_gen ? r->cap_gen * 2 : 64;
        int *ids = realloc(r->ids, (size_t)cap * sizeof *ids);
        if (!ids) return -1;
        r->ids = ids;
        if (r->p.top_logprobs >= 0) {
            srv_lp *l = realloc(r->lp, (size_t)cap * sizeof *l);
            if (!l) return -1;
            r->lp = l;
        }
        r->cap_gen = cap;
    }
    r->ids[r->n_gen++] = id;
    if (has_lp) r->lp[r->n_lp++] = *lp;
    s->st.completion_tokens++;
    if (sl->released > r->text.len && e0_sb_add(&r->text, sl->gen.p + r->text.len, sl->released - r->text.len) < 0)
        return -1;
    pthread_cond_broadcast(&r->cv);
    return 0;
}

/* Under mu: stop sequences that were cancelled or ran out of time; admit queued requests. */
static void housekeeping(srv_sched *s) {
    double now = e0_now();
    for (int i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (!sl->r) continue;
        if (s->draining && s->drain_deadline > 0 && now >= s->drain_deadline && sl->r->cancel == SRV_FINISH_NONE)
            sl->r->cancel = SRV_FINISH_CANCELLED;
        if (sl->r->p.deadline > 0 && now >= sl->r->p.deadline && sl->r->cancel == SRV_FINISH_NONE)
            sl->r->cancel = SRV_FINISH_TIMEOUT;
        if (sl->r->cancel != SRV_FINISH_NONE)
            slot_end(s, sl, sl->r->cancel,
                     sl->r->cancel == SRV_FINISH_TIMEOUT ? "the request's time limit passed"
                     : s->draining                       ? "cancelled: the server is shutting down"
                                                         : "cancelled");
    }
    /* queued requests: drop the cancelled and expired ones, admit the rest in order */
    srv_req **pp = &s->q_head;
    srv_req *last = NULL;
    while (*pp) {
        srv_req *r = *pp;
        srv_finish why = r->cancel;
        if (why == SRV_FINISH_NONE && r->p.deadline > 0 && now >= r->p.deadline) why = SRV_FINISH_TIMEOUT;
        int lcp = 0;
        slot *sl = why == SRV_FINISH_NONE ? pick_slot(s, r, &lcp) : NULL;
        if (why == SRV_FINISH_NONE && !sl) { /* no free slot: the rest wait */
            last = r;
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        s->q_len--;
        if (why != SRV_FINISH_NONE) {
            finish_locked(s, r, why, why == SRV_FINISH_TIMEOUT ? "the request's time limit passed while queued" : "cancelled");
            unref(r);
        } else slot_start(s, sl, r, lcp);
    }
    s->q_tail = last;
}

static void *worker_main(void *arg) {
    srv_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        housekeeping(s);
        if (s->stop && s->active == 0) break;
        if (s->active == 0) {
            if (s->q_len == 0 || !s->stop) {
                /* sleep until work arrives (or, with queued requests that wait for a deadline, briefly) */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 200000000L;
                if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
                pthread_cond_timedwait(&s->work, &s->mu, &ts);
            }
            continue;
        }
        /* the step: one token per decoding sequence, then prompt pieces round-robin from s->rr,
         * within n_batch rows (step.c evaluates them in one forward pass): the first prompt
         * always (a longer step is split by step.c), the others into the room left; while any
         * sequence decodes, at most prefill_budget prompt tokens, so that a long prompt does not
         * hold the others' next tokens for a whole chunk (prompt_piece: the same bits). */
        int n = 0, rows = 0, last_prefill = -1;
        for (int i = 0; i < s->n_slots; i++) {
            slot *sl = &s->slots[i];
            if (!sl->r || sl->n_done < sl->r->n_prompt) continue;
            srv_item *it = &s->items[n++];
            memset(it, 0, sizeof *it);
            it->c = sl->c;
            it->tokens = &sl->next;
            it->n = 1;
            rows++;
        }
        int left = rows ? s->prefill_budget : s->n_batch; /* prompt tokens this step may take */
        for (int k = 0; k < s->n_slots && left > 0; k++) {
            int i = (s->rr + k) % s->n_slots;
            slot *sl = &s->slots[i];
            if (!sl->r || sl->n_done >= sl->r->n_prompt) continue;
            const int room = last_prefill < 0 ? left : left < s->n_batch - rows ? left : s->n_batch - rows;
            const int take = room > 0 ? prompt_piece(sl, room) : 0;
            if (take == 0) continue;
            srv_item *it = &s->items[n++];
            memset(it, 0, sizeof *it);
            it->c = sl->c;
            it->tokens = sl->r->prompt + sl->n_done;
            it->n = take;
            it->prefill = true;
            rows += take;
            left -= take;
            last_prefill = i;
        }
        if (last_prefill >= 0) s->rr = (last_prefill + 1) % s->n_slots;
        pthread_mutex_unlock(&s->mu);

        /* evaluate (step.c), then sample each sequence whose logits are for a new token */
        double t_pre = 0, t_dec = 0;
        srv_step_forward(s->items, n, &t_pre, &t_dec);
        typedef struct {
            slot *sl;
            srv_finish fin;
            int id;
            bool has_lp, sampled, oom;
            srv_lp lp;
            char err[256];
        } outcome;
        outcome out[64];
        int n_out = 0;
        for (int j = 0; j < n; j++) {
            srv_item *it = &s->items[j];
            slot *sl = NULL;
            for (int i = 0; i < s->n_slots; i++)
                if (s->slots[i].c == it->c) sl = &s->slots[i];
            outcome *o = &out[n_out++];
            memset(o, 0, sizeof *o);
            o->sl = sl;
            if (it->rc < 0) {
                o->fin = SRV_FINISH_ERROR;
                snprintf(o->err, sizeof o->err, "%.200s", it->err.msg);
                sl->n_cached = 0; /* the cache's state is unknown now */
                e0_ctx_truncate(sl->c, 0);
                continue;
            }
            /* the KV cache now holds these tokens too */
            memcpy(sl->cached + sl->n_cached, it->tokens, (size_t)it->n * sizeof *it->tokens);
            sl->n_cached += it->n;
            if (it->prefill) {
                sl->n_done += it->n;
                if (sl->n_done < sl->r->n_prompt) continue; /* more prompt to go */
            }
            o->sampled = true;
            o->fin = sample_one(s, sl, &o->id, &o->lp, &o->has_lp, &o->oom, o->err, sizeof o->err);
            if (o->oom && !o->err[0]) snprintf(o->err, sizeof o->err, "out of memory");
        }

        pthread_mutex_lock(&s->mu);
        s->st.prefill_seconds += t_pre;
        s->st.decode_seconds += t_dec;
        s->st.steps++;
        for (int j = 0; j < n; j++)
            if (s->items[j].prefill && s->items[j].rc == 0) s->st.prefilled_tokens += (uint64_t)s->items[j].n, s->st.prompt_pieces++;
        for (int j = 0; j < n_out; j++) {
            outcome *o = &out[j];
            if (o->sampled && !o->oom && publish(s, o->sl, o->id, &o->lp, o->has_lp) < 0) {
                o->fin = SRV_FINISH_ERROR;
                snprintf(o->err, sizeof o->err, "out of memory");
            }
            if (o->fin != SRV_FINISH_NONE) slot_end(s, o->sl, o->fin, o->err[0] ? o->err : NULL);
        }
        if (s->ses->xc) {
            const e0_experts_stats *x = e0_experts_get_stats(s->ses->xc);
            s->st.expert_hits = x->hits;
            s->st.expert_misses = x->misses;
            s->st.expert_bytes_read = x->bytes_read;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- construction ---- */

srv_sched *srv_sched_new(e0_session *ses, const e0_tokenizer *tok, const srv_sched_params *p, e0_err *e) {
    if (p->n_slots < 1 || p->n_slots > 64) return e0_fail(e, "-np must be between 1 and 64"), NULL;
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) return e0_fail(e, "out of memory"), NULL;
    s->ses = ses;
    s->tok = tok;
    s->n_vocab = ses->m->hp.n_vocab;
    s->n_slots = p->n_slots;
    s->max_queue = p->max_queue;
    s->n_ctx = e0_ctx_n_ctx(ses->c);
    s->n_batch = e0_ctx_n_batch(ses->c);
    s->prefill_budget = p->prefill_budget > 0 && p->prefill_budget < s->n_batch ? p->prefill_budget : s->n_batch;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    s->slots = calloc((size_t)p->n_slots, sizeof *s->slots);
    s->items = calloc((size_t)p->n_slots, sizeof *s->items);
    if (!s->slots || !s->items) {
        e0_fail(e, "out of memory");
        goto fail;
    }
    for (int i = 0; i < p->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (i == 0) sl->c = ses->c;
        else {
            /* configured as load.c configures the session's context; the worker steps one slot at
             * a time, so every slot works in slot 0's scratch buffers (its own: logits, predictor) */
            e0_ctx_params cp = p->cp;
            cp.scratch_owner = ses->c;
            if (!(sl->c = e0_ctx_new(ses->m, &cp, e))) goto fail;
            sl->own_ctx = true;
            /* one pool of workers for every slot: the worker steps them one at a time, so N
             * pools would only add idle (and briefly spinning) threads, oversubscribing the cores */
            if (e0_ctx_share_threads(sl->c, ses->c, e) < 0) goto fail;
            e0_session_setup_ctx(ses, sl->c, i, p->n_slots);
        }
        if (e0_ctx_n_ctx(sl->c) != s->n_ctx) {
            e0_fail(e, "slot contexts differ in size");
            goto fail;
        }
        if (!(sl->cached = malloc((size_t)s->n_ctx * sizeof *sl->cached))) {
            e0_fail(e, "out of memory");
            goto fail;
        }
    }
    s->st.n_slots = s->n_slots;
    s->st.kv_cells_total = (int64_t)s->n_ctx * s->n_slots;
    s->st.streamed = ses->xc != NULL;
    if (pthread_create(&s->worker, NULL, worker_main, s) != 0) {
        e0_fail(e, "cannot start the scheduler thread");
        goto fail;
    }
    s->worker_started = true;
    return s;
fail:
    srv_sched_free(s);
    return NULL;
}

int srv_sched_n_ctx(const srv_sched *s) { return s->n_ctx; }

void srv_get_stats(srv_sched *s, srv_stats *st) {
    pthread_mutex_lock(&s->mu);
    *st = s->st;
    st->queue_depth = s->q_len;
    st->active = s->active;
    st->requests_live = atomic_load(&n_live_reqs);
    st->kv_cells_used = st->kv_cells_cached = 0;
    for (int i = 0; i < s->n_slots; i++) {
        if (s->slots[i].r) st->kv_cells_used += e0_ctx_pos(s->slots[i].c);
        else st->kv_cells_cached += s->slots[i].n_cached;
    }
    pthread_mutex_unlock(&s->mu);
}

void srv_drain(srv_sched *s, double grace_s) {
    pthread_mutex_lock(&s->mu);
    s->draining = true;
    s->drain_deadline = e0_now() + grace_s;
    for (srv_req *r = s->q_head; r; r = r->next)
        if (r->cancel == SRV_FINISH_NONE) r->cancel = SRV_FINISH_CANCELLED;
    pthread_cond_signal(&s->work);
    while (s->active > 0 || s->q_len > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_signal(&s->work);
        pthread_cond_timedwait(&s->idle, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
}

void srv_sched_free(srv_sched *s) {
    if (!s) return;
    if (s->worker_started) {
        srv_drain(s, 0);
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->worker, NULL);
    }
    if (s->slots)
        for (int i = 0; i < s->n_slots; i++) {
            if (s->slots[i].own_ctx) e0_ctx_free(s->slots[i].c);
            free(s->slots[i].cached);
        }
    free(s->slots);
    free(s->items);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
