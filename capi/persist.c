/*
 * persist.c - durability of what the C fast path writes (issue 20).
 *
 * The fast path (datapath.c) stores straight into the mapping of an item, so
 * the Go core never sees those writes. For an item of a persistent region
 * the slot's view carries OFAM_RIGHT_PERSIST; after such a write the fast
 * path loads the slot's dirty flag (on the slot's cache line, already
 * read) and, only when it is clear (the first write after a flush) or under
 * the each policy, calls ofam_persist_wrote, which sets the flag and
 * appends the slot to a short list under a mutex. Volatile items pay the
 * test of a bit already in a register.
 *
 * ofam_persist_flush, run by the core's flush (fam_quiet, fam_ctx_quiet,
 * the lazy policy's timer) through the hook capi registers, takes the list,
 * clears each flag before its msync (a racing write lists the slot again)
 * and msyncs the slot's whole view: the kernel writes only the dirty pages,
 * so the cost follows what was written. When more slots are dirty than the
 * list holds, a flag says so and the flush scans every slot instead.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ofam.h"

#define OFAM_DIRTY_MAX 1024

static pthread_mutex_t ofam_dirty_lock = PTHREAD_MUTEX_INITIALIZER;
static ofam_slot *ofam_dirty[OFAM_DIRTY_MAX];
static uint32_t ofam_ndirty;
static int ofam_dirty_overflow;
static int ofam_persist_policy;
int ofam_persist_each;

void ofam_set_persist_policy(int policy)
{
    __atomic_store_n(&ofam_persist_policy, policy, __ATOMIC_RELEASE);
    __atomic_store_n(&ofam_persist_each, policy == OFAM_PERSIST_EACH, __ATOMIC_RELEASE);
}

/* Reads the slot's view consistently (the seqlock of ofam.h); 0 if it has
 * none now. */
static int ofam_view_of(ofam_slot *s, char **base, uint64_t *size)
{
    for (int tries = 0; tries < 64; tries++) {
        uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        char *b = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
        uint64_t n = __atomic_load_n(&s->size, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if ((seq & 1) == 0 && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq) {
            *base = b;
            *size = n;
            return b != NULL && n > 0;
        }
    }
    return 0;
}

/* msync(MS_SYNC) of the pages holding [b, b+n). ENOMEM means the mapping
 * is gone (the view was retired), and with it the need. */
static int ofam_msync(char *b, uint64_t n)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)b & ~(page - 1);
    uintptr_t hi = ((uintptr_t)b + n + page - 1) & ~(page - 1);
    while (msync((void *)lo, hi - lo, MS_SYNC) != 0) {
        if (errno == EINTR)
            continue;
        return errno == ENOMEM ? 0 : errno;
    }
    return 0;
}

static int ofam_flush_slot(ofam_slot *s)
{
    __atomic_store_n(&s->dirty, 0, __ATOMIC_SEQ_CST);
    char *b;
    uint64_t n;
    if (!ofam_view_of(s, &b, &n))
        return 0;
    return ofam_msync(b, n);
}

int ofam_persist_wrote(ofam_slot *s, int blocking)
{
    if (blocking && __atomic_load_n(&ofam_persist_policy, __ATOMIC_RELAXED) == OFAM_PERSIST_EACH) {
        char *b;
        uint64_t n;
        int e = ofam_view_of(s, &b, &n) ? ofam_msync(b, n) : 0;
        if (e != 0)
            return ofam_fail(FAM_ERESOURCE, "writing the data item to stable storage: %s", strerror(e));
        return 0;
    }
    if (__atomic_load_n(&s->dirty, __ATOMIC_RELAXED))
        return 0;
    if (__atomic_exchange_n(&s->dirty, 1, __ATOMIC_SEQ_CST))
        return 0;
    pthread_mutex_lock(&ofam_dirty_lock);
    if (ofam_ndirty < OFAM_DIRTY_MAX)
        ofam_dirty[ofam_ndirty++] = s;
    else
        ofam_dirty_overflow = 1;
    pthread_mutex_unlock(&ofam_dirty_lock);
    return 0;
}

int ofam_persist_flush(void)
{
    static ofam_slot *list[OFAM_DIRTY_MAX];
    static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
    /* One flush at a time: list is shared, and two would msync the same
     * pages twice for nothing. */
    pthread_mutex_lock(&flush_lock);
    pthread_mutex_lock(&ofam_dirty_lock);
    uint32_t n = ofam_ndirty;
    int all = ofam_dirty_overflow;
    for (uint32_t i = 0; i < n; i++)
        list[i] = ofam_dirty[i];
    ofam_ndirty = 0;
    ofam_dirty_overflow = 0;
    pthread_mutex_unlock(&ofam_dirty_lock);
    int first = 0;
    for (uint32_t i = 0; i < n; i++) {
        int e = ofam_flush_slot(list[i]);
        if (e != 0 && first == 0)
            first = e;
    }
    if (all) {
        for (uint32_t c = 0; c < OFAM_NCHUNKS; c++) {
            ofam_slot *chunk = __atomic_load_n(&ofam_chunks[c], __ATOMIC_ACQUIRE);
            if (chunk == NULL)
                continue;
            for (uint32_t i = 0; i < OFAM_CHUNK_SLOTS; i++) {
                if (!__atomic_load_n(&chunk[i].dirty, __ATOMIC_RELAXED))
                    continue;
                int e = ofam_flush_slot(&chunk[i]);
                if (e != 0 && first == 0)
                    first = e;
            }
        }
    }
    pthread_mutex_unlock(&flush_lock);
    return first;
}
