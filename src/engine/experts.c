/* experts.c — the routed-expert cache (see experts.h): per-layer slots, eviction, a pool of I/O
 * threads reading expert matrices with pread (through the page cache or O_DIRECT), prefetch.
 *
 * Layout: each matrix of a slot has its own 4096-aligned region, one page larger than the matrix
 * rounded up to pages, and sits in it at its file offset modulo 4096, so that O_DIRECT reads the
 * covering aligned range of the file straight into the region (no staging copy) and parallel
 * reads of one expert's matrices never touch each other's pages.
 *
 * Concurrency: one mutex guards everything shared. The main thread owns the slot table (which
 * expert is where, pins, recency, counters); an I/O thread only takes a read request from a
 * queue, fills the bytes of a slot in state LOADING (nobody else touches them until it is
 * READY), then updates `pending`, `state` and the error fields and wakes the main thread. */
#include "engine/experts.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant/quant.h"

#define DIRECT_ALIGN 4096 /* O_DIRECT offset/length/buffer alignment; a multiple of any logical block size in use */
#define N_PARTS 3         /* gate, up, down */

enum slot_state { SLOT_EMPTY, SLOT_LOADING, SLOT_READY, SLOT_FAILED };
enum read_error { READ_OK = 0, READ_EOF, READ_ERRNO };

typedef struct slot {
    int expert;          /* -1 when empty */
    int state;           /* slot_state */
    int pins;
    int pending;         /* read requests not finished yet */
    bool from_prefetch;  /* loaded by prefetch and not acquired since */
    bool predicted;      /* named by the layer's latest prefetch, not acquired since (protect_predicted) */
    uint64_t last_use;
    int err_kind, err_errno; /* first failure of the current load */
    uint64_t err_offset;
    uint32_t err_file;
    uint8_t *data;
} slot;

typedef struct layer_cache {
    slot *slots;
    int n_slots;         /* e0_experts_layer_slots of this layer (0: a dense layer) */
    int *where;          /* [n_expert]: slot holding the expert, or -1 */
    uint32_t *freq;      /* [n_expert]: LFU use counts (aged); PIN ranks by them too */
    uint64_t requests;   /* since the last LFU aging */
    double *crf;         /* [n_expert]: LRFU score at its last update */
    uint64_t *crf_at;    /* [n_expert]: `clock` of that update */
    uint64_t clock;      /* acquire calls of this layer (LRFU's time) */
    uint8_t *mem;
    size_t mem_bytes;
    size_t part_off[N_PARTS], part_len[N_PARTS]; /* region offset in a slot (page-aligned); matrix bytes */
    uint64_t file_off[N_PARTS];                   /* of expert 0's matrix, in the file */
    uint32_t file_split[N_PARTS];                 /* that file: gguf splits[] index */
    uint32_t file_type[N_PARTS];                  /* the file's type of each part, and */
    bool repack[N_PARTS];                         /* whether reads are repacked (e0_repack) */
    uint64_t expert_bytes;
    size_t stride;
} layer_cache;

typedef struct read_req {
    int layer, slot, part;
} read_req;

typedef struct req_queue {
    read_req *q;
    size_t cap, head, n;
} req_queue;

typedef struct io_thread {
    e0_experts *x;
    pthread_t tid;
} io_thread;

struct e0_experts {
    const e0_model *m;
    const gguf_split *files; /* the model's files (one, or those of a split model) */
    uint32_t n_files;
    int n_layer;
    int64_t n_expert;
    int read_mode, evict;
    bool protect_predicted;
    const char *why;
    char why_buf[256];
    int *fd_direct; /* [n_files]: opened with O_DIRECT (-1: none); cached reads use files[].fd */
    layer_cache *layers;

    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    req_queue urgent, background;
    bool stop;
    io_thread *threads;
    int n_threads, n_started;
    bool sync_ok;          /* mutex and condition variables initialized */

    uint64_t tick;
    uint32_t mark_gen;
    uint32_t *mark;        /* [n_expert]: == mark_gen when seen in the current call */
    int *call_slot;        /* [n_expert]: slot pinned for the i-th distinct id of a call */
    int *call_id;          /* [n_expert]: the i-th distinct id */
    e0_experts_stats st;
};

/* ---- sizes ---- */

static const e0_weight *part_weight(const e0_layer *L, int p) {
    return p == 0 ? &L->gate_exps : p == 1 ? &L->up_exps : &L->down_exps;
}

uint64_t e0_expert_bytes(const e0_model *m, int layer) {
    if (!m || layer < 0 || layer >= m->hp.n_layer || m->hp.n_expert <= 0) return 0;
    const e0_layer *L = &m->layers[layer];
    uint64_t b = 0;
    for (int p = 0; p < N_PARTS; p++) {
        if (!part_weight(L, p)->t) return 0;
        b += part_weight(L, p)->matrix_bytes;
    }
    return b;
}

static size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

int64_t e0_experts_layer_slots(const e0_model *m, const e0_experts_params *p, int layer) {
    if (!m || !p || layer < 0 || layer >= m->hp.n_layer || layer < m->hp.n_layer_dense_lead) return 0;
    /* the layers with experts are layers lead .. n_layer-1; the i-th of them (of n) has an extra
     * slot where floor((i X + n/2) / n) steps up at i + 1: X of them (the steps add up to
     * floor((n X + n/2) / n) = X), one in the middle of each n/X layers */
    const int64_t n = m->hp.n_layer - m->hp.n_layer_dense_lead, i = layer - m->hp.n_layer_dense_lead;
    const int64_t X = p->extra_layers < 0 ? 0 : p->extra_layers > n ? n : p->extra_layers;
    return p->slots + (((i + 1) * X + n / 2) / n > (i * X + n / 2) / n);
}

/* A matrix's region in a slot: the covering aligned range of any of its experts' byte ranges. */
static size_t region_bytes(size_t matrix_bytes) { return align_up(matrix_bytes + DIRECT_ALIGN - 1, DIRECT_ALIGN); }

/* Slot stride of a layer: the regions of its three matrices. */
static size_t slot_stride(const e0_layer *L) {
    size_t s = 0;
    for (int p = 0; p < N_PARTS; p++) s += region_bytes(part_weight(L, p)->matrix_bytes);
    return s;
}

uint64_t e0_experts_memory(const e0_model *m, const e0_experts_params *p) {
    if (!m || !p || m->hp.n_expert <= 0 || !m->layers) return 0;
    uint64_t total = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        if (!e0_expert_bytes(m, il)) {
            if (il < m->hp.n_layer_dense_lead) continue; /* a leading dense layer: no slots */
            return 0;
        }
        int64_t ns = e0_experts_layer_slots(m, p, il);
        if (ns > 0) total += (uint64_t)slot_stride(&m->layers[il]) * (uint64_t)ns + DIRECT_ALIGN; /* + alignment */
    }
    return total;
}

/* ---- request queues ---- */

static void queue_push(req_queue *q, read_req r) {
    /* Capacity is n_layer * slots * 3: every slot has at most 3 requests outstanding. */
    q->q[(q->head + q->n) % q->cap] = r;
    q->n++;
}

static read_req queue_pop(req_queue *q) {
    read_req r = q->q[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return r;
}

/* ---- reading ---- */

/* pread into dst from off, asking for up to want bytes, until need (<= want) have come: READ_OK,
 * READ_EOF (the file ends first: a read of 0 bytes, or one short of a whole block, which only
 * the end of the file gives) or READ_ERRNO. */
static int read_span(int fd, uint8_t *dst, size_t want, size_t need, uint64_t off, size_t block, int *err_no,
                     uint64_t *err_off) {
    size_t got = 0;
    while (got < need) {
        ssize_t r = pread(fd, dst + got, want - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            *err_no = errno;
            *err_off = off + got;
            return READ_ERRNO;
        }
        got += (size_t)r;
        if (got < need && (r == 0 || got % block)) {
            *err_off = off + got;
            return READ_EOF;
        }
    }
    return READ_OK;
}

/* Through the page cache: exactly len bytes at off. */
static int read_cached(int fd, uint8_t *dst, size_t len, uint64_t off, int *err_no, uint64_t *err_off) {
    return read_span(fd, dst, len, len, off, 1, err_no, err_off);
}

/* O_DIRECT: read the covering aligned range of [off, off + len) into `region` (page-aligned, the
 * matrix's place in its slot), whose bytes at off % DIRECT_ALIGN are then the matrix. The aligned
 * end may lie past the end of the file; only the bytes up to off + len must arrive (O_DIRECT
 * transfers whole blocks, so a short read ends at the end of the file). */
static int read_direct(int fd, uint8_t *region, size_t len, uint64_t off, int *err_no, uint64_t *err_off) {
    const uint64_t a0 = off & ~(uint64_t)(DIRECT_ALIGN - 1);
    const size_t need = (size_t)(off + len - a0);
    return read_span(fd, region, align_up(need, DIRECT_ALIGN), need, a0, DIRECT_ALIGN, err_no, err_off);
}

/* Where matrix p of the expert in slot s lies: in its region at its file offset modulo DIRECT_ALIGN. */
static uint8_t *part_data(const layer_cache *lc, const slot *s, int p) {
    return s->data + lc->part_off[p] + (size_t)((lc->file_off[p] + (uint64_t)s->expert * lc->part_len[p]) % DIRECT_ALIGN);
}

static void *io_main(void *arg) {
    io_thread *t = arg;
    e0_experts *x = t->x;
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (!x->stop && !x->urgent.n && !x->background.n) pthread_cond_wait(&x->work_cv, &x->mu);
        if (x->stop) break;
        read_req r = queue_pop(x->urgent.n ? &x->urgent : &x->background);
        layer_cache *lc = &x->layers[r.layer];
        slot *s = &lc->slots[r.slot];
        uint8_t *region = s->data + lc->part_off[r.part], *dst = part_data(lc, s, r.part);
        size_t len = lc->part_len[r.part];
        uint64_t off = lc->file_off[r.part] + (uint64_t)s->expert * len;
        pthread_mutex_unlock(&x->mu);

        int err_no = 0;
        uint64_t err_off = 0;
        const uint32_t file = lc->file_split[r.part];
        int rc = x->read_mode == E0_READ_DIRECT ? read_direct(x->fd_direct[file], region, len, off, &err_no, &err_off)
                                                : read_cached(x->files[file].fd, dst, len, off, &err_no, &err_off);
        if (rc == READ_OK && lc->repack[r.part]) e0_repack(lc->file_type[r.part], dst, len); /* as the resident load */

        pthread_mutex_lock(&x->mu);
        if (rc != READ_OK && !s->err_kind) {
            s->err_kind = rc;
            s->err_errno = err_no;
            s->err_offset = err_off;
            s->err_file = file;
        }
        if (--s->pending == 0) {
            s->state = s->err_kind ? SLOT_FAILED : SLOT_READY;
            pthread_cond_broadcast(&x->done_cv);
        }
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* ---- slot table (mutex held) ---- */

/* Bytes asked of the file for one expert (covering aligned ranges under O_DIRECT). */
static uint64_t device_bytes(const e0_experts *x, const layer_cache *lc, int id) {
    if (x->read_mode != E0_READ_DIRECT) return lc->expert_bytes;
    uint64_t b = 0;
    for (int p = 0; p < N_PARTS; p++) {
        uint64_t off = lc->file_off[p] + (uint64_t)id * lc->part_len[p];
        uint64_t a0 = off & ~(uint64_t)(DIRECT_ALIGN - 1);
        b += align_up((size_t)(off + lc->part_len[p] - a0), DIRECT_ALIGN);
    }
    return b;
}

static void start_load(e0_experts *x, int layer, int si, int id, bool urgent) {
    layer_cache *lc = &x->layers[layer];
    slot *s = &lc->slots[si];
    if (s->expert >= 0 && lc->where[s->expert] == si) {
        if (s->state == SLOT_READY && s->expert != id) x->st.evictions++;
        lc->where[s->expert] = -1;
    }
    s->expert = id;
    s->state = SLOT_LOADING;
    s->pending = N_PARTS;
    s->err_kind = READ_OK;
    s->from_prefetch = !urgent;
    s->last_use = x->tick;
    lc->where[id] = si;
    for (int p = 0; p < N_PARTS; p++) queue_push(urgent ? &x->urgent : &x->background, (read_req){layer, si, p});
    x->st.reads += N_PARTS;
    x->st.bytes_read += lc->expert_bytes;
    x->st.bytes_device += device_bytes(x, lc, id);
    pthread_cond_broadcast(&x->work_cv);
}

double e0_lrfu_decay(double score, uint64_t steps) { return score * exp2(-E0_LRFU_LAMBDA * (double)steps); }

/* LRFU: the score of expert id now (its last score decayed over the layer steps since). */
static double lrfu_score(const layer_cache *lc, int id) { return e0_lrfu_decay(lc->crf[id], lc->clock - lc->crf_at[id]); }

/* PIN: is expert id among the layer's 3/4 * slots most used (fewer of them than that with a
 * strictly higher count, and used at all)? */
static bool pin_protected(const e0_experts *x, const layer_cache *lc, int id) {
    const int64_t top = lc->n_slots * 3 / 4;
    if (!lc->freq[id] || top < 1) return false;
    int64_t above = 0;
    for (int64_t i = 0; i < x->n_expert && above < top; i++) above += lc->freq[i] > lc->freq[id];
    return above < top;
}

/* Is slot a (with PIN protection pa) a better eviction victim than slot b (pb)? */
static bool better_victim(const e0_experts *x, const layer_cache *lc, const slot *a, bool pa, const slot *b, bool pb) {
    if (x->evict == E0_EVICT_LFU) {
        uint32_t fa = lc->freq[a->expert], fb = lc->freq[b->expert];
        if (fa != fb) return fa < fb;
    } else if (x->evict == E0_EVICT_LRFU) {
        double sa = lrfu_score(lc, a->expert), sb = lrfu_score(lc, b->expert);
        if (sa != sb) return sa < sb;
    } else if (x->evict == E0_EVICT_PIN && pa != pb) {
        return pb; /* the unprotected one goes first */
    }
    return a->last_use < b->last_use;
}

/* A slot to load into: an empty or failed one, else the policy's victim among unpinned, idle
 * experts. -1 if none; *busy tells whether an unpinned slot is being read (wait for it).
 * Predicted experts (protect_predicted) are taken only when no other is left, and never when
 * spare_predicted (a prefetch). */
static int pick_slot(const e0_experts *x, const layer_cache *lc, bool spare_predicted, bool *busy) {
    int best = -1;
    bool best_pin = false, best_pred = false;
    *busy = false;
    for (int i = 0; i < lc->n_slots; i++) {
        const slot *s = &lc->slots[i];
        if (s->pins) continue;
        if (s->state == SLOT_EMPTY || s->state == SLOT_FAILED) return i;
        if (s->state == SLOT_LOADING) {
            *busy = true;
            continue;
        }
        bool pred = x->protect_predicted && s->predicted;
        if (pred && spare_predicted) continue;
        bool pin = x->evict == E0_EVICT_PIN && pin_protected(x, lc, s->expert);
        if (best >= 0 && pred != best_pred) {
            if (pred) continue; /* an unpredicted candidate is always preferred */
        } else if (best >= 0 && !better_victim(x, lc, s, pin, &lc->slots[best], best_pin)) {
            continue;
        }
        best = i;
        best_pin = pin;
        best_pred = pred;
    }
    return best;
}

static void count_use(e0_experts *x, layer_cache *lc, int id) {
    lc->crf[id] = lrfu_score(lc, id) + 1;
    lc->crf_at[id] = lc->clock;
    lc->freq[id] = lc->freq[id] < UINT32_MAX ? lc->freq[id] + 1 : UINT32_MAX;
    if (++lc->requests >= 4 * (uint64_t)x->n_expert) {
        for (int64_t i = 0; i < x->n_expert; i++) lc->freq[i] >>= 1;
        lc->requests = 0;
    }
}

static int slot_error(const e0_experts *x, int layer, const slot *s, e0_err *e) {
    if (s->err_kind == READ_EOF)
        return e0_fail(e, "%s: unexpected end of file reading expert %d of layer %d (at offset %llu)",
                       x->files[s->err_file].path, s->expert, layer, (unsigned long long)s->err_offset);
    return e0_fail(e, "%s: read error at offset %llu reading expert %d of layer %d: %s", x->files[s->err_file].path,
                   (unsigned long long)s->err_offset, s->expert, layer, strerror(s->err_errno));
}

/* ---- acquire, release, prefetch ---- */

/* Wait (mutex held) until the slot holding expert id is no longer being read; the time goes to
 * wait_seconds. */
static void wait_loaded(e0_experts *x, const layer_cache *lc, int id) {
    while (lc->slots[lc->where[id]].state == SLOT_LOADING) {
        double w0 = e0_now();
        pthread_cond_wait(&x->done_cv, &x->mu);
        x->st.wait_seconds += e0_now() - w0;
    }
}

/* The first part of acquire (mutex held): check, count, pin the hits, give each miss a slot and
 * start its reads (waiting only for a slot to become idle). Returns the number of distinct ids,
 * whose slots are call_slot[0 ..), or -1 (nothing new pinned). */
static int acquire_begin(e0_experts *x, int layer, const int *ids, int n, e0_err *e) {
    layer_cache *lc = &x->layers[layer];
    /* Distinct ids, and how many more slots they would pin. */
    if (++x->mark_gen == 0) {
        memset(x->mark, 0, (size_t)x->n_expert * sizeof *x->mark);
        x->mark_gen = 1;
    }
    int nd = 0, pinned = 0, new_pins = 0;
    for (int i = 0; i < lc->n_slots; i++) pinned += lc->slots[i].pins > 0;
    for (int i = 0; i < n; i++) {
        if (x->mark[ids[i]] == x->mark_gen) continue;
        x->mark[ids[i]] = x->mark_gen;
        x->call_id[nd++] = ids[i];
        int si = lc->where[ids[i]];
        new_pins += !(si >= 0 && lc->slots[si].pins > 0);
    }
    if (pinned + new_pins > lc->n_slots)
        return e0_fail(e, "expert cache: layer %d needs %d distinct experts pinned at once (%d already pinned) but has "
                          "only %d slots; acquire fewer at a time or raise expert_slots",
                       layer, pinned + new_pins, pinned, lc->n_slots);
    x->tick++;
    lc->clock++;

    /* Hits first (pinned at once so that loading the misses cannot evict them). */
    for (int d = 0; d < nd; d++) {
        int id = x->call_id[d], si = lc->where[id];
        x->st.requests++;
        count_use(x, lc, id);
        x->call_slot[d] = -1;
        if (si < 0 || lc->slots[si].state == SLOT_FAILED) continue;
        slot *s = &lc->slots[si];
        x->st.hits++;
        if (s->from_prefetch) x->st.prefetch_hits++;
        s->from_prefetch = false;
        s->predicted = false;
        s->last_use = x->tick;
        s->pins++;
        x->call_slot[d] = si;
    }
    /* Misses: a slot each (waiting for an idle one if all unpinned slots are being read). */
    for (int d = 0; d < nd; d++) {
        if (x->call_slot[d] >= 0) continue;
        int id = x->call_id[d], si = lc->where[id]; /* a failed earlier load of this id: reuse its slot */
        bool busy;
        while (si < 0) {
            si = pick_slot(x, lc, false, &busy);
            if (si >= 0 || !busy) break;
            double w0 = e0_now();
            pthread_cond_wait(&x->done_cv, &x->mu);
            x->st.wait_seconds += e0_now() - w0;
        }
        if (si < 0) { /* cannot happen: the pin count was checked above */
            for (int k = 0; k < d; k++)
                if (x->call_slot[k] >= 0) lc->slots[x->call_slot[k]].pins--;
            return e0_fail(e, "expert cache: no free slot in layer %d", layer);
        }
        x->st.misses++;
        start_load(x, layer, si, id, true);
        lc->slots[si].predicted = false;
        lc->slots[si].pins++;
        x->call_slot[d] = si;
    }
    return nd;
}

static int check_args(const e0_experts *x, int layer, const int *ids, int n, const void *out, e0_err *e) {
    if (layer < 0 || layer >= x->n_layer)
        return e0_fail(e, "expert cache: layer %d out of range (the model has %d layers)", layer, x->n_layer);
    if (n < 0 || (n > 0 && (!ids || !out))) return e0_fail(e, "expert cache: bad arguments to acquire");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= x->n_expert)
            return e0_fail(e, "expert cache: expert id %d out of range (layer %d has %lld experts)", ids[i], layer,
                           (long long)x->n_expert);
    if (!x->layers[layer].slots) return e0_fail(e, "expert cache: layer %d has no routed experts", layer);
    return 0;
}

static e0_expert_ptrs slot_ptrs(const layer_cache *lc, const slot *s) {
    return (e0_expert_ptrs){part_data(lc, s, 0), part_data(lc, s, 1), part_data(lc, s, 2)};
}

int e0_experts_acquire(e0_experts *x, int layer, const int *ids, int n, e0_expert_ptrs *out, e0_err *e) {
    if (check_args(x, layer, ids, n, out, e) < 0) return -1;
    layer_cache *lc = &x->layers[layer];
    pthread_mutex_lock(&x->mu);
    int nd = acquire_begin(x, layer, ids, n, e);
    if (nd < 0) {
        pthread_mutex_unlock(&x->mu);
        return -1;
    }
    /* Wait for every read of this call (ours and prefetches in flight). */
    for (int d = 0; d < nd; d++) wait_loaded(x, lc, x->call_id[d]);
    for (int d = 0; d < nd; d++) {
        const slot *s = &lc->slots[x->call_slot[d]];
        if (s->state != SLOT_FAILED) continue;
        slot_error(x, layer, s, e);
        for (int k = 0; k < nd; k++) lc->slots[x->call_slot[k]].pins--;
        pthread_mutex_unlock(&x->mu);
        return -1;
    }
    for (int i = 0; i < n; i++) out[i] = slot_ptrs(lc, &lc->slots[lc->where[ids[i]]]);
    pthread_mutex_unlock(&x->mu);
    return 0;
}

int e0_experts_acquire_begin(e0_experts *x, int layer, const int *ids, int n, e0_err *e) {
    if (check_args(x, layer, ids, n, ids, e) < 0) return -1;
    pthread_mutex_lock(&x->mu);
    int rc = acquire_begin(x, layer, ids, n, e);
    pthread_mutex_unlock(&x->mu);
    return rc < 0 ? -1 : 0;
}

int e0_experts_take_ready(e0_experts *x, int layer, int *ids, int n, e0_expert_ptrs *out, e0_err *e) {
    if (check_args(x, layer, ids, n, out, e) < 0) return -1;
    if (n == 0) return 0;
    layer_cache *lc = &x->layers[layer];
    pthread_mutex_lock(&x->mu);
    for (int i = 0; i < n; i++) {
        int si = lc->where[ids[i]];
        if (si < 0 || !lc->slots[si].pins) {
            pthread_mutex_unlock(&x->mu);
            return e0_fail(e, "expert cache: expert %d of layer %d was not acquired", ids[i], layer);
        }
    }
    /* Wait until at least one has been read, then move those read to the front, in order. */
    for (;;) {
        int r = 0;
        for (int i = 0; i < n; i++) r += lc->slots[lc->where[ids[i]]].state != SLOT_LOADING;
        if (r) break;
        double w0 = e0_now();
        pthread_cond_wait(&x->done_cv, &x->mu);
        x->st.wait_seconds += e0_now() - w0;
    }
    int r = 0;
    for (int i = 0; i < n; i++) {
        const slot *s = &lc->slots[lc->where[ids[i]]];
        if (s->state == SLOT_LOADING) continue;
        if (s->state == SLOT_FAILED) {
            slot_error(x, layer, s, e);
            for (int k = 0; k < lc->n_slots; k++) lc->slots[k].pins = 0;
            pthread_mutex_unlock(&x->mu);
            return -1;
        }
        int id = ids[i];
        memmove(ids + r + 1, ids + r, (size_t)(i - r) * sizeof *ids);
        ids[r] = id;
        out[r++] = slot_ptrs(lc, s);
    }
    pthread_mutex_unlock(&x->mu);
    return r;
}

void e0_experts_release(e0_experts *x, int layer) {
    if (!x || layer < 0 || layer >= x->n_layer || !x->layers[layer].slots) return;
    pthread_mutex_lock(&x->mu);
    layer_cache *lc = &x->layers[layer];
    for (int i = 0; i < lc->n_slots; i++) lc->slots[i].pins = 0;
    pthread_mutex_unlock(&x->mu);
}

void e0_experts_prefetch(e0_experts *x, int layer, const int *ids, int n) {
    if (!x || !ids || layer < 0 || layer >= x->n_layer || !x->layers[layer].slots) return;
    layer_cache *lc = &x->layers[layer];
    pthread_mutex_lock(&x->mu);
    x->tick++; /* prefetched experts count as the most recent, so the next prefetch does not evict them */
    for (int i = 0; i < lc->n_slots; i++) lc->slots[i].predicted = false; /* this prediction replaces the last */
    /* first every named expert the cache holds (or is reading), so that reading the missing ones
     * never evicts one named later in the list */
    for (int i = 0; i < n; i++) {
        int id = ids[i], si = id >= 0 && id < x->n_expert ? lc->where[id] : -1;
        if (si >= 0 && lc->slots[si].state != SLOT_FAILED) lc->slots[si].predicted = true;
    }
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (id < 0 || id >= x->n_expert) continue;
        int si = lc->where[id];
        if (si >= 0 && lc->slots[si].state != SLOT_FAILED) continue; /* resident or being read: marked above */
        if (si < 0) {
            bool busy;
            si = pick_slot(x, lc, true, &busy);
            if (si < 0) break;
        }
        x->st.prefetched++;
        start_load(x, layer, si, id, false);
        lc->slots[si].predicted = true;
    }
    pthread_mutex_unlock(&x->mu);
}

const e0_experts_stats *e0_experts_get_stats(const e0_experts *x) { return &x->st; }

const char *e0_evict_name(int evict) {
    static const char *const names[E0_EVICT_COUNT] = {"lru", "lfu", "lrfu", "pin"};
    return evict >= 0 && evict < E0_EVICT_COUNT ? names[evict] : NULL;
}

void e0_experts_reset_stats(e0_experts *x) { memset(&x->st, 0, sizeof x->st); }

int e0_experts_read_mode(const e0_experts *x, const char **why) {
    if (why) *why = x->why;
    return x->read_mode;
}

int e0_experts_slots(const e0_experts *x, int layer) {
    return x && layer >= 0 && layer < x->n_layer ? x->layers[layer].n_slots : 0;
}

/* The state of the slot holding expert id of layer (-1: in no slot, or out of range). */
static int slot_state_of(const e0_experts *x, int layer, int id) {
    if (!x || layer < 0 || layer >= x->n_layer || id < 0 || id >= x->n_expert || !x->layers[layer].where) return -1;
    e0_experts *mx = (e0_experts *)x; /* the mutex is not part of the logical state */
    pthread_mutex_lock(&mx->mu);
    int si = x->layers[layer].where[id], st = si >= 0 ? x->layers[layer].slots[si].state : -1;
    pthread_mutex_unlock(&mx->mu);
    return st;
}

bool e0_experts_held(const e0_experts *x, int layer, int id) {
    int st = slot_state_of(x, layer, id);
    return st >= 0 && st != SLOT_FAILED;
}

bool e0_experts_resident(const e0_experts *x, int layer, int id) { return slot_state_of(x, layer, id) == SLOT_READY; }

/* ---- construction ---- */

static _Atomic bool test_refuse_direct;
void e0_experts_test_refuse_direct(bool on) { test_refuse_direct = on; }

/* Open each file of the model a second time with O_DIRECT and read one aligned block of it (the
 * first: at the first expert). On any failure fall back to cached reads and say why. */
static void setup_direct(e0_experts *x) {
    int l0 = 0; /* the first layer with experts (deepseek2's leading layers are dense) */
    while (l0 + 1 < x->n_layer && !x->layers[l0].slots) l0++;
    uint8_t *probe = x->layers[l0].slots[0].data; /* an empty, aligned slot */
    const char *step = "open";
    uint32_t i = 0;
    for (; i < x->n_files; i++) {
        int fd = test_refuse_direct ? (errno = EINVAL, -1) : open(x->files[i].path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) break;
        x->fd_direct[i] = fd;
        const uint64_t off = i == 0 ? x->layers[l0].file_off[0] & ~(uint64_t)(DIRECT_ALIGN - 1) : 0;
        ssize_t r;
        do r = pread(fd, probe, DIRECT_ALIGN, (off_t)off);
        while (r < 0 && errno == EINTR);
        if (r <= 0) {
            step = "first read";
            if (r == 0) errno = EIO;
            break;
        }
    }
    if (i == x->n_files) return;
    snprintf(x->why_buf, sizeof x->why_buf, "O_DIRECT refused by the file system (%s of %s: %s); using cached reads",
             step, x->files[i].path, strerror(errno));
    for (uint32_t j = 0; j < x->n_files; j++)
        if (x->fd_direct[j] >= 0) {
            close(x->fd_direct[j]);
            x->fd_direct[j] = -1;
        }
    x->why = x->why_buf;
    x->read_mode = E0_READ_CACHED;
}

e0_experts *e0_experts_new(const e0_model *m, const e0_experts_params *p, e0_err *e) {
    if (!m || !p) {
        e0_fail(e, "expert cache: no model or parameters");
        return NULL;
    }
    const e0_hparams *hp = &m->hp;
    if (hp->n_expert <= 0 || !m->layers || !m->gguf) {
        e0_fail(e, "expert cache: the model has no routed experts");
        return NULL;
    }
    if (p->slots < 1 || p->slots > hp->n_expert) {
        e0_fail(e, "expert_slots = %lld out of range [1, %lld] (n_expert)", (long long)p->slots, (long long)hp->n_expert);
        return NULL;
    }
    const int64_t n_moe = hp->n_layer - hp->n_layer_dense_lead;
    if (p->extra_layers < 0 || p->extra_layers >= n_moe || (p->extra_layers > 0 && p->slots + 1 > hp->n_expert)) {
        e0_fail(e, "expert cache: %lld layers with an extra slot out of range [0, %lld] (%lld slots of %lld experts)",
                (long long)p->extra_layers, (long long)(p->slots < hp->n_expert ? n_moe - 1 : 0), (long long)p->slots,
                (long long)hp->n_expert);
        return NULL;
    }
    if (p->read_mode != E0_READ_CACHED && p->read_mode != E0_READ_DIRECT) {
        e0_fail(e, "expert cache: unknown read mode %d", p->read_mode);
        return NULL;
    }
    if (!e0_evict_name(p->evict)) {
        e0_fail(e, "expert cache: unknown eviction policy %d", p->evict);
        return NULL;
    }
    if (p->n_io_threads < 0 || p->n_io_threads > E0_EXPERTS_MAX_IO_THREADS) {
        e0_fail(e, "expert cache: %d I/O threads out of range [0, %d]", p->n_io_threads, E0_EXPERTS_MAX_IO_THREADS);
        return NULL;
    }
    e0_experts *x = calloc(1, sizeof *x);
    if (!x) {
        e0_fail(e, "out of memory");
        return NULL;
    }
    x->m = m;
    x->files = m->gguf->splits;
    x->n_files = m->gguf->n_splits;
    x->n_layer = (int)hp->n_layer;
    x->n_expert = hp->n_expert;
    x->read_mode = p->read_mode;
    x->evict = p->evict;
    x->protect_predicted = p->protect_predicted;
    x->n_threads = p->n_io_threads ? p->n_io_threads : E0_EXPERTS_DEFAULT_IO_THREADS;

    size_t nx = (size_t)x->n_expert, qcap = 0;
    for (int il = 0; il < x->n_layer; il++) qcap += (size_t)e0_experts_layer_slots(m, p, il) * N_PARTS;
    x->layers = calloc((size_t)x->n_layer, sizeof *x->layers);
    x->mark = calloc(nx, sizeof *x->mark);
    x->call_slot = calloc(nx, sizeof *x->call_slot);
    x->call_id = calloc(nx, sizeof *x->call_id);
    x->urgent = (req_queue){.q = calloc(qcap, sizeof(read_req)), .cap = qcap};
    x->background = (req_queue){.q = calloc(qcap, sizeof(read_req)), .cap = qcap};
    x->threads = calloc((size_t)x->n_threads, sizeof *x->threads);
    x->fd_direct = malloc(x->n_files * sizeof *x->fd_direct);
    for (uint32_t i = 0; x->fd_direct && i < x->n_files; i++) x->fd_direct[i] = -1;
    if (!x->layers || !x->mark || !x->call_slot || !x->call_id || !x->urgent.q || !x->background.q || !x->threads ||
        !x->fd_direct) {
        e0_fail(e, "out of memory");
        goto fail;
    }
    for (int il = 0; il < x->n_layer; il++) {
        const e0_layer *L = &m->layers[il];
        layer_cache *lc = &x->layers[il];
        lc->expert_bytes = e0_expert_bytes(m, il);
        if (!lc->expert_bytes && il < m->hp.n_layer_dense_lead) continue; /* dense: no cache */
        const size_t ns = (size_t)e0_experts_layer_slots(m, p, il);
        lc->n_slots = (int)ns;
        if (!lc->expert_bytes) {
            e0_fail(e, "expert cache: layer %d has no routed experts", il);
            goto fail;
        }
        size_t off = 0;
        for (int q = 0; q < N_PARTS; q++) {
            const e0_weight *w = part_weight(L, q);
            lc->part_off[q] = off;
            lc->part_len[q] = w->matrix_bytes;
            lc->file_off[q] = w->t->offset;
            lc->file_split[q] = w->t->split;
            lc->file_type[q] = w->t->type;
            lc->repack[q] = w->type != w->t->type; /* the model keeps this type repacked */
            off += region_bytes(w->matrix_bytes);
        }
        lc->stride = off; /* = slot_stride(L) */
        uint64_t total;
        if (e0_mul_overflow(off, ns, &total) || total > SIZE_MAX - DIRECT_ALIGN) {
            e0_fail(e, "expert cache: slots of layer %d too large", il);
            goto fail;
        }
        lc->mem_bytes = (size_t)total + DIRECT_ALIGN; /* room to align the first slot */
        lc->mem = e0_alloc(E0_MEM_EXPERTS, lc->mem_bytes);
        lc->slots = calloc(ns, sizeof *lc->slots);
        lc->where = malloc(nx * sizeof *lc->where);
        lc->freq = calloc(nx, sizeof *lc->freq);
        lc->crf = calloc(nx, sizeof *lc->crf);
        lc->crf_at = calloc(nx, sizeof *lc->crf_at);
        if (!lc->mem || !lc->slots || !lc->where || !lc->freq || !lc->crf || !lc->crf_at) {
            e0_fail(e, "cannot allocate %zu bytes for the expert slots of layer %d", lc->mem_bytes, il);
            goto fail;
        }
        for (size_t i = 0; i < nx; i++) lc->where[i] = -1;
        uint8_t *base = lc->mem + (DIRECT_ALIGN - (uintptr_t)lc->mem % DIRECT_ALIGN) % DIRECT_ALIGN;
        for (size_t i = 0; i < ns; i++) lc->slots[i] = (slot){.expert = -1, .data = base + i * lc->stride};
    }
    if (x->read_mode == E0_READ_DIRECT) setup_direct(x);
    if (pthread_mutex_init(&x->mu, NULL)) {
        e0_fail(e, "expert cache: cannot create a mutex");
        goto fail;
    }
    if (pthread_cond_init(&x->work_cv, NULL)) {
        pthread_mutex_destroy(&x->mu);
        e0_fail(e, "expert cache: cannot create a condition variable");
        goto fail;
    }
    if (pthread_cond_init(&x->done_cv, NULL)) {
        pthread_cond_destroy(&x->work_cv);
        pthread_mutex_destroy(&x->mu);
        e0_fail(e, "expert cache: cannot create a condition variable");
        goto fail;
    }
    x->sync_ok = true;
    for (int t = 0; t < x->n_threads; t++) {
        x->threads[t].x = x;
        int rc = pthread_create(&x->threads[t].tid, NULL, io_main, &x->threads[t]);
        if (rc) {
            e0_fail(e, "expert cache: cannot start I/O thread: %s", strerror(rc));
            goto fail;
        }
        x->n_started++;
    }
    return x;
fail:
    e0_experts_free(x);
    return NULL;
}

void e0_experts_free(e0_experts *x) {
    if (!x) return;
    if (x->sync_ok) {
        pthread_mutex_lock(&x->mu);
        x->stop = true;
        pthread_cond_broadcast(&x->work_cv);
        pthread_mutex_unlock(&x->mu);
        for (int t = 0; t < x->n_started; t++) pthread_join(x->threads[t].tid, NULL);
        pthread_cond_destroy(&x->done_cv);
        pthread_cond_destroy(&x->work_cv);
        pthread_mutex_destroy(&x->mu);
    }
    if (x->layers)
        for (int il = 0; il < x->n_layer; il++) {
            layer_cache *lc = &x->layers[il];
            e0_free(E0_MEM_EXPERTS, lc->mem, lc->mem_bytes);
            free(lc->slots);
            free(lc->where);
            free(lc->freq);
            free(lc->crf);
            free(lc->crf_at);
        }
    if (x->fd_direct)
        for (uint32_t i = 0; i < x->n_files; i++)
            if (x->fd_direct[i] >= 0) close(x->fd_direct[i]);
    free(x->fd_direct);
    free(x->layers);
    free(x->mark);
    free(x->call_slot);
    free(x->call_id);
    free(x->urgent.q);
    free(x->background.q);
    free(x->threads);
    free(x);
}
