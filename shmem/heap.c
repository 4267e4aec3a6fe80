/*
 * heap.c: the symmetric heap's allocator. Every PE runs the same
 * deterministic first-fit allocator over its own heap, and OpenSHMEM
 * requires the allocation calls to be collective with the same arguments,
 * so the same call sequence gives the same offsets on every PE with no
 * communication. The block list is kept outside the heap (malloc'd), so a
 * program overrunning a block cannot corrupt the allocator.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "shmem.h"

typedef struct shmemi_block {
    size_t off, size;
    int used;
    struct shmemi_block *next;
} shmemi_block;

static char *shmemi_heap_base;
static shmemi_block *shmemi_blocks;
static pthread_mutex_t shmemi_heap_mu = PTHREAD_MUTEX_INITIALIZER;
size_t shmemi_heap_hwm;

#define SHMEMI_MIN_ALIGN 64 /* a cache line: no false sharing between blocks */

void shmemi_heap_setup(void *base, size_t size)
{
    while (shmemi_blocks) {
        shmemi_block *n = shmemi_blocks->next;
        free(shmemi_blocks);
        shmemi_blocks = n;
    }
    shmemi_heap_base = base;
    shmemi_blocks = calloc(1, sizeof *shmemi_blocks);
    if (shmemi_blocks == NULL)
        shmemi_abort("shmem_init", "out of memory");
    shmemi_blocks->size = size;
    shmemi_heap_hwm = 0;
}

/* Splits block b at b->off + at: b keeps the first at bytes. */
static int shmemi_split(shmemi_block *b, size_t at)
{
    if (at == 0 || at >= b->size)
        return 0;
    shmemi_block *n = malloc(sizeof *n);
    if (n == NULL)
        return -1;
    n->off = b->off + at;
    n->size = b->size - at;
    n->used = 0;
    n->next = b->next;
    b->size = at;
    b->next = n;
    return 0;
}

static void *shmemi_alloc_locked(size_t align, size_t n)
{
    if (align < SHMEMI_MIN_ALIGN)
        align = SHMEMI_MIN_ALIGN;
    n = (n + SHMEMI_MIN_ALIGN - 1) & ~(size_t)(SHMEMI_MIN_ALIGN - 1);
    for (shmemi_block *b = shmemi_blocks; b != NULL; b = b->next) {
        if (b->used)
            continue;
        uintptr_t a = (uintptr_t)shmemi_heap_base + b->off;
        size_t pad = (align - a % align) % align;
        if (pad > b->size || b->size - pad < n)
            continue;
        if (pad > 0) {
            if (shmemi_split(b, pad) != 0)
                return NULL;
            b = b->next;
        }
        if (shmemi_split(b, n) != 0)
            return NULL;
        b->used = 1;
        if (b->off + b->size > shmemi_heap_hwm)
            shmemi_heap_hwm = b->off + b->size;
        return shmemi_heap_base + b->off;
    }
    return NULL;
}

static shmemi_block *shmemi_find(const void *p, shmemi_block **prev)
{
    *prev = NULL;
    for (shmemi_block *b = shmemi_blocks; b != NULL; *prev = b, b = b->next)
        if (b->used && shmemi_heap_base + b->off == (const char *)p)
            return b;
    return NULL;
}

static void shmemi_free_locked(const char *call, void *p)
{
    shmemi_block *prev, *b = shmemi_find(p, &prev);
    if (b == NULL)
        shmemi_abort(call, "%p is not a block of the symmetric heap (already freed, or not from shmem_malloc)", p);
    b->used = 0;
    shmemi_block *n = b->next;
    if (n != NULL && !n->used) {
        b->size += n->size;
        b->next = n->next;
        free(n);
    }
    if (prev != NULL && !prev->used) {
        prev->size += b->size;
        prev->next = b->next;
        free(b);
    }
}

static void *shmemi_malloc(const char *call, size_t align, size_t n)
{
    shmemi_check_init(call);
    void *p = NULL;
    if (n > 0) {
        pthread_mutex_lock(&shmemi_heap_mu);
        p = shmemi_alloc_locked(align, n);
        pthread_mutex_unlock(&shmemi_heap_mu);
    }
    /* The spec's synchronisation: no PE uses the block before every PE
     * has it. The allocation is identical everywhere, so a PE that failed
     * knows every PE failed: all return NULL. */
    shmemi_barrier_all();
    return p;
}

void *shmem_malloc(size_t size)
{
    return shmemi_malloc("shmem_malloc", SHMEMI_MIN_ALIGN, size);
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
    (void)hints; /* every hint is a performance hint; one kind of memory here */
    return shmemi_malloc("shmem_malloc_with_hints", SHMEMI_MIN_ALIGN, size);
}

void *shmem_calloc(size_t count, size_t size)
{
    if (size != 0 && count > (size_t)-1 / size) {
        shmemi_check_init("shmem_calloc");
        shmemi_barrier_all();
        return NULL;
    }
    shmemi_check_init("shmem_calloc");
    void *p = NULL;
    size_t n = count * size;
    if (n > 0) {
        pthread_mutex_lock(&shmemi_heap_mu);
        p = shmemi_alloc_locked(SHMEMI_MIN_ALIGN, n);
        pthread_mutex_unlock(&shmemi_heap_mu);
        /* Local memory is this PE's copy in either mode (private mode
         * sends the zeros to the item at the next sync point). */
        if (p != NULL)
            memset(p, 0, n);
    }
    shmemi_barrier_all();
    return p;
}

void *shmem_align(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        shmemi_check_init("shmem_align");
        shmemi_barrier_all();
        return NULL;
    }
    return shmemi_malloc("shmem_align", alignment, size);
}

void shmem_free(void *ptr)
{
    shmemi_check_init("shmem_free");
    /* No PE may still be using the block: synchronise first. */
    shmemi_barrier_all();
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&shmemi_heap_mu);
    shmemi_free_locked("shmem_free", ptr);
    pthread_mutex_unlock(&shmemi_heap_mu);
}

void *shmem_realloc(void *ptr, size_t size)
{
    static const char call[] = "shmem_realloc";
    if (ptr == NULL)
        return shmemi_malloc(call, SHMEMI_MIN_ALIGN, size);
    if (size == 0) {
        shmem_free(ptr);
        return NULL;
    }
    shmemi_check_init(call);
    shmemi_barrier_all();
    pthread_mutex_lock(&shmemi_heap_mu);
    shmemi_block *prev, *b = shmemi_find(ptr, &prev);
    if (b == NULL) {
        pthread_mutex_unlock(&shmemi_heap_mu);
        shmemi_abort(call, "%p is not a block of the symmetric heap", ptr);
    }
    size_t old = b->size;
    void *p = shmemi_alloc_locked(SHMEMI_MIN_ALIGN, size);
    if (p != NULL) {
        memmove(p, ptr, old < size ? old : size);
        shmemi_free_locked(call, ptr);
    }
    pthread_mutex_unlock(&shmemi_heap_mu);
    shmemi_barrier_all();
    return p;
}
