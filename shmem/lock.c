/*
 * lock.c: shmem_set_lock, shmem_test_lock, shmem_clear_lock.
 *
 * A ticket lock in the symmetric lock word as it lives on PE 0: the high 32
 * bits hand out tickets, the low 32 bits say which ticket is served. The
 * word starts at 0 (the spec makes the user zero it), which is "free, next
 * ticket 0". Taking a ticket is one fetch-add; waiting is reading the word
 * until the low half equals the ticket; releasing is advancing the low half
 * alone (a compare-and-swap, so it never carries into the tickets). Locks
 * are granted in arrival order (fair, unlike a test-and-set spin) and a
 * waiter only reads while it waits. Where PE 0's word is mapped the
 * operations are CPU atomics on the mapping; elsewhere (PE 0 on another
 * host, or a lock word the core cannot map) they are the core's atomics
 * (shmem_long_atomic_*), which reach the same word.
 */
#include <shmem.h>

#include "coll.h"

#define TICKET_ONE (1L << 32)
#define SERVING(v) ((uint32_t)(unsigned long)(v))
#define TICKET(v) ((uint32_t)((unsigned long)(v) >> 32))

static long *lock_word(const char *call, long *lock)
{
    shmemi_check_init(call);
    if (lock == NULL)
        shmemi_abort(call, "lock is NULL");
    shmemi_check_sym(call, lock, sizeof(long));
    /* CPU atomics only where every PE can use them on this word: PE 0's
     * view of the word being mapped on PE 0 proves nothing (a PE always
     * maps itself), so also ask for one other PE's. A global lock word,
     * which peers reach through the core, then goes through the core on
     * PE 0 too: one agent per word, never a CPU atomic racing a core's
     * read-modify-write. */
    long *m = shmemi_ptr(lock, 0);
    if (m != NULL && shmemi_n_pes > 1 && shmemi_ptr(lock, shmemi_my_pe == 0 ? 1 : 0) == NULL)
        m = NULL;
    return m;
}

static long load(long *mapped, long *lock)
{
    return mapped ? __atomic_load_n(mapped, __ATOMIC_ACQUIRE) : shmem_long_atomic_fetch(lock, 0);
}

static int cas(long *mapped, long *lock, long old, long new)
{
    if (mapped)
        return __atomic_compare_exchange_n(mapped, &old, new, 0, __ATOMIC_ACQ_REL,
                                           __ATOMIC_ACQUIRE);
    return shmem_long_atomic_compare_swap(lock, old, new, 0) == old;
}

/* Private mode (shmemi_private_mode): peers' writes reach this PE's
 * memory only at sync points, so taking a lock is one (exchange with the
 * items: what the previous holders wrote here becomes visible) and so is
 * releasing it (what this PE stored here reaches its item first). */
static void acquired(void)
{
    if (shmemi_private_mode) {
        shmemi_sync_push();
        shmemi_sync_pull();
    }
}

void shmem_set_lock(long *lock)
{
    long *m = lock_word("shmem_set_lock", lock);
    long v = m ? __atomic_fetch_add(m, TICKET_ONE, __ATOMIC_ACQ_REL)
               : shmem_long_atomic_fetch_add(lock, TICKET_ONE, 0);
    uint32_t ticket = TICKET(v);
    unsigned spins = 0;
    while (SERVING(v) != ticket) {
        shmemi_coll_spin(&spins);
        v = load(m, lock);
    }
    acquired();
}

int shmem_test_lock(long *lock)
{
    long *m = lock_word("shmem_test_lock", lock);
    long v = load(m, lock);
    /* Free means nobody holds or waits: next ticket == ticket served. Take
     * it only if the word is unchanged since we looked. */
    if (TICKET(v) != SERVING(v))
        return 1;
    if (!cas(m, lock, v, (long)((unsigned long)v + (unsigned long)TICKET_ONE)))
        return 1;
    acquired();
    return 0;
}

void shmem_clear_lock(long *lock)
{
    long *m = lock_word("shmem_clear_lock", lock);
    /* Updates made while holding the lock are complete before the next
     * holder can see the lock free. */
    shmemi_quiet();
    if (shmemi_private_mode)
        shmemi_sync_push();
    long v = load(m, lock);
    unsigned spins = 0;
    for (;;) {
        if (TICKET(v) == SERVING(v))
            shmemi_abort("shmem_clear_lock", "the lock is not held");
        unsigned long next = ((unsigned long)v & ~0xffffffffUL) | (uint32_t)(SERVING(v) + 1);
        if (cas(m, lock, v, (long)next))
            return;
        shmemi_coll_spin(&spins);
        v = load(m, lock);
    }
}
