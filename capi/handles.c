/*
 * handles.c - the handle slot table, the thread-local error, the instance
 * state and fork detection of libopenfam's C layer. See ofam.h for the design.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ofam.h"

ofam_slot *ofam_chunks[OFAM_NCHUNKS];
int ofam_state = OFAM_DOWN;

/* The process that loaded the library. The Go runtime inside it starts its
 * threads at load time, not at fam_initialize, so any child forked from this
 * process, before or after fam_initialize, has lost them and must never
 * enter Go: a call into Go there blocks forever. */
static pid_t ofam_load_pid;

struct ofam_name {
    ofam_name *next;
    char s[];
};

/* Writers of the slot table (allocation, release, views, names). */
static pthread_mutex_t ofam_wlock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t ofam_free_head; /* 0: empty */
static uint32_t ofam_next_index = 1;

static __thread int ofam_err_code;
static __thread char ofam_err_msg[512];

const char *fam_errmsg(void)
{
    return ofam_err_msg;
}

int fam_errcode(void)
{
    return ofam_err_code;
}

int ofam_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ofam_err_msg, sizeof ofam_err_msg, fmt, ap);
    va_end(ap);
    ofam_err_code = code;
    return -code;
}

void ofam_set_error(int code, const char *msg, size_t n)
{
    if (n >= sizeof ofam_err_msg)
        n = sizeof ofam_err_msg - 1;
    if (n > 0)
        memcpy(ofam_err_msg, msg, n);
    ofam_err_msg[n] = '\0';
    ofam_err_code = code;
}

int ofam_not_ready(const char *fn)
{
    if (__atomic_load_n(&ofam_state, __ATOMIC_ACQUIRE) == OFAM_FORKED)
        return ofam_fail(FAM_EINVAL, "%s: called in a child forked from a process that had libopenfam loaded; "
                                     "the library's runtime threads do not survive fork, so fork without exec "
                                     "is unsupported: exec a new program in the child (posix_spawn, or Python "
                                     "multiprocessing 'spawn'/'forkserver')", fn);
    return ofam_fail(FAM_EINVAL, "%s: not initialized (call fam_initialize first)", fn);
}

static void ofam_atfork_child(void)
{
    /* Only this thread survives the fork; the Go runtime's threads do not, so
     * any call into Go could hang. The lock is reset because its holder may
     * have been another thread. */
    pthread_mutex_init(&ofam_wlock, NULL);
    __atomic_store_n(&ofam_state, OFAM_FORKED, __ATOMIC_RELEASE);
}

/* Runs when the library is loaded, before the program can fork: a handler
 * registered only at fam_initialize would miss a fork that comes earlier. */
__attribute__((constructor)) static void ofam_on_load(void)
{
    ofam_load_pid = getpid();
    pthread_atfork(NULL, NULL, ofam_atfork_child);
}

int ofam_check_forked(void)
{
    if (__atomic_load_n(&ofam_state, __ATOMIC_ACQUIRE) == OFAM_FORKED)
        return 1;
    /* A child made by a raw fork or clone system call ran no atfork
     * handler, but has another pid. */
    if (getpid() != ofam_load_pid) {
        pthread_mutex_init(&ofam_wlock, NULL);
        __atomic_store_n(&ofam_state, OFAM_FORKED, __ATOMIC_RELEASE);
        return 1;
    }
    return 0;
}

void ofam_set_ready(int ready)
{
    pthread_mutex_lock(&ofam_wlock);
    if (__atomic_load_n(&ofam_state, __ATOMIC_RELAXED) != OFAM_FORKED)
        __atomic_store_n(&ofam_state, ready ? OFAM_READY : OFAM_DOWN, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ofam_wlock);
}

/* The seqlock's writer side; callers hold ofam_wlock. */
static void ofam_write_begin(ofam_slot *s)
{
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void ofam_write_end(ofam_slot *s)
{
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

static ofam_slot *ofam_slot_at(uint32_t idx)
{
    return &ofam_chunks[idx >> OFAM_CHUNK_BITS][idx & (OFAM_CHUNK_SLOTS - 1)];
}

uint64_t ofam_slot_new(uint32_t kind)
{
    uint64_t h = 0;
    pthread_mutex_lock(&ofam_wlock);
    uint32_t idx = ofam_free_head;
    if (idx != 0) {
        ofam_free_head = ofam_slot_at(idx)->next_free;
    } else if (ofam_next_index <= OFAM_INDEX_MASK) {
        idx = ofam_next_index;
        uint32_t c = idx >> OFAM_CHUNK_BITS;
        if (ofam_chunks[c] == NULL) {
            /* Chunks live as long as the process so that a lookup with any
             * index never touches freed memory. */
            ofam_slot *chunk = calloc(OFAM_CHUNK_SLOTS, sizeof(ofam_slot));
            if (chunk == NULL)
                goto out;
            for (uint32_t i = 0; i < OFAM_CHUNK_SLOTS; i++)
                chunk[i].gen = 1;
            __atomic_store_n(&ofam_chunks[c], chunk, __ATOMIC_RELEASE);
        }
        ofam_next_index++;
    } else {
        goto out;
    }
    ofam_slot *s = ofam_slot_at(idx);
    ofam_write_begin(s);
    __atomic_store_n(&s->base, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&s->size, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->rights, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kind, kind, __ATOMIC_RELAXED);
    ofam_write_end(s);
    h = ((uint64_t)s->gen << 32) | ((uint64_t)kind << OFAM_INDEX_BITS) | idx;
out:
    pthread_mutex_unlock(&ofam_wlock);
    return h;
}

/* Releases a live slot; callers hold ofam_wlock. */
static void ofam_release_locked(ofam_slot *s, uint32_t idx)
{
    ofam_write_begin(s);
    uint32_t gen = s->gen + 1;
    if (gen == 0)
        gen = 1; /* generation 0 never names a live slot */
    __atomic_store_n(&s->gen, gen, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kind, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->base, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&s->size, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->rights, 0, __ATOMIC_RELAXED);
    ofam_write_end(s);
    for (ofam_name *n = s->names, *next; n != NULL; n = next) {
        next = n->next;
        free(n);
    }
    s->names = NULL;
    s->next_free = ofam_free_head;
    ofam_free_head = idx;
}

/* The slot of a live handle of any kind; callers hold ofam_wlock. */
static ofam_slot *ofam_live_locked(uint64_t h)
{
    uint32_t kind = (uint32_t)(h >> OFAM_INDEX_BITS) & 0xf;
    if (kind == 0)
        return NULL;
    ofam_slot *s = ofam_slot_of(h, kind);
    if (s == NULL || s->gen != (uint32_t)(h >> 32) || s->kind != kind)
        return NULL;
    return s;
}

int ofam_slot_release(uint64_t h)
{
    int ok = 0;
    pthread_mutex_lock(&ofam_wlock);
    ofam_slot *s = ofam_live_locked(h);
    if (s != NULL) {
        ofam_release_locked(s, (uint32_t)h & OFAM_INDEX_MASK);
        ok = 1;
    }
    pthread_mutex_unlock(&ofam_wlock);
    return ok;
}

uint32_t ofam_slot_release_all(void)
{
    uint32_t n = 0;
    pthread_mutex_lock(&ofam_wlock);
    for (uint32_t idx = 1; idx < ofam_next_index; idx++) {
        ofam_slot *s = ofam_slot_at(idx);
        if (s->kind != 0) {
            ofam_release_locked(s, idx);
            n++;
        }
    }
    pthread_mutex_unlock(&ofam_wlock);
    return n;
}

void ofam_slot_set_view(uint64_t h, void *base, uint64_t size, uint32_t rights)
{
    pthread_mutex_lock(&ofam_wlock);
    ofam_slot *s = ofam_live_locked(h);
    if (s != NULL) {
        ofam_write_begin(s);
        __atomic_store_n(&s->base, base != NULL ? (char *)base : NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&s->size, base != NULL ? size : 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->rights, base != NULL ? rights : 0, __ATOMIC_RELAXED);
        ofam_write_end(s);
    }
    pthread_mutex_unlock(&ofam_wlock);
}

const char *ofam_slot_name(uint64_t h, const char *p, size_t n)
{
    const char *r = NULL;
    pthread_mutex_lock(&ofam_wlock);
    ofam_slot *s = ofam_live_locked(h);
    if (s != NULL) {
        /* Earlier strings stay valid until release: a caller may still hold
         * the name of a previous fam_stat. */
        if (s->names != NULL && strlen(s->names->s) == n && memcmp(s->names->s, p, n) == 0) {
            r = s->names->s;
        } else {
            ofam_name *nm = malloc(sizeof *nm + n + 1);
            if (nm != NULL) {
                if (n > 0)
                    memcpy(nm->s, p, n);
                nm->s[n] = '\0';
                nm->next = s->names;
                s->names = nm;
                r = nm->s;
            }
        }
    }
    pthread_mutex_unlock(&ofam_wlock);
    return r;
}

int ofam_slot_live(uint64_t h, uint32_t kind)
{
    return ofam_handle_live(h, kind);
}
