/*
 * rma.c: the untyped RMA routines (putmem, getmem), signals, and the
 * pre-1.2 names. The typed forms are generated (rma_gen.c).
 */
#include <stdarg.h>

#include "core.h"
#include "shmem.h"

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_put_c(__func__, dest, source, nelems, pe);
}

void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_get_c(__func__, dest, source, nelems, pe);
}

void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_put_c(__func__, dest, source, nelems, pe);
}

void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_get_c(__func__, dest, source, nelems, pe);
}

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_put_c(__func__, dest, source, nelems, shmemi_ctx_pe(__func__, ctx, pe));
}

void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_get_c(__func__, dest, source, nelems, shmemi_ctx_pe(__func__, ctx, pe));
}

void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_put_c(__func__, dest, source, nelems, shmemi_ctx_pe(__func__, ctx, pe));
}

void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    shmemi_get_c(__func__, dest, source, nelems, shmemi_ctx_pe(__func__, ctx, pe));
}

/* Updates the signal word after the data of a put_signal: the data is
 * stored first (a mapped copy, or a blocking FAM put), then a release
 * fence orders it before the signal, so a PE that sees the signal sees the
 * data. */
void shmemi_signal_c(const char *call, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if (sig_op == SHMEM_SIGNAL_SET)
        (void)shmemi_amo64(call, sig_addr, SHMEMI_AMO_SET, signal, 0, pe);
    else if (sig_op == SHMEM_SIGNAL_ADD)
        (void)shmemi_amo64(call, sig_addr, SHMEMI_AMO_ADD, signal, 0, pe);
    else
        shmemi_abort(call, "signal operation %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
}

void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                         int sig_op, int pe)
{
    shmemi_put_c(__func__, dest, source, nelems, pe);
    shmemi_signal_c(__func__, sig_addr, signal, sig_op, pe);
}

void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe)
{
    shmemi_put_c(__func__, dest, source, nelems, pe);
    shmemi_signal_c(__func__, sig_addr, signal, sig_op, pe);
}

void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe)
{
    pe = shmemi_ctx_pe(__func__, ctx, pe);
    shmemi_put_c(__func__, dest, source, nelems, pe);
    shmemi_signal_c(__func__, sig_addr, signal, sig_op, pe);
}

void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    pe = shmemi_ctx_pe(__func__, ctx, pe);
    shmemi_put_c(__func__, dest, source, nelems, pe);
    shmemi_signal_c(__func__, sig_addr, signal, sig_op, pe);
}

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    shmemi_check_init(__func__);
    return shmemi_amo64(__func__, (void *)sig_addr, SHMEMI_AMO_FETCH, 0, 0, shmemi_my_pe);
}

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    shmem_uint64_wait_until(sig_addr, cmp, cmp_value);
    return shmem_signal_fetch(sig_addr);
}

void shmem_pcontrol(const int level, ...)
{
    (void)level;
}

/* ---- pre-1.2 names ------------------------------------------------------------- */

void start_pes(int npes)
{
    (void)npes; /* ignored, as the specification says */
    shmem_init();
}

int _my_pe(void)
{
    return shmem_my_pe();
}

int _num_pes(void)
{
    return shmem_n_pes();
}

void *shmalloc(size_t size)
{
    return shmem_malloc(size);
}

void shfree(void *ptr)
{
    shmem_free(ptr);
}

void *shmemalign(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

void *shrealloc(void *ptr, size_t size)
{
    return shmem_realloc(ptr, size);
}

/* Cache management: nothing to do on coherent memory. */
void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
void shmem_set_cache_line_inv(void *dest) { (void)dest; }
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest) { (void)dest; }
