/*
 * core.c: the OpenSHMEM layer's job setup on FAM. shmem_init finds the
 * PE's rank and the job size in the launcher's environment, joins the
 * job's FAM region (one per job, made by PE 0), allocates this PE's two
 * data items (its symmetric heap, and a copy of the program's static and
 * global data) and maps every peer's items that fam_map can map here, so
 * puts, gets and atomics on peers' memory are memcpy and CPU atomics.
 *
 * Static and global data. At init the main program's writable data
 * (.data and .bss after RELRO) is copied into the PE's data item and that
 * item's mapping is moved over the range with mremap (one atomic
 * replacement, no window in which the globals are missing), so the
 * program's own loads and stores to its globals and the peers' accesses
 * through their mappings of the item touch the same pages: wait_until on
 * a global a peer writes works, and atomics on globals are CPU atomics.
 * The mapping fam_map handed out is left with a PROT_NONE placeholder so
 * the library's bookkeeping (which retires mappings at fam_finalize)
 * never touches the globals; shmem_finalize moves private memory back.
 * Where fam_map cannot map items (memory servers, another host), globals
 * stay private and a remote access to one aborts naming the limitation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "shmem.h"

int shmemi_my_pe = 0;
int shmemi_n_pes = 1;
int shmemi_initialized = 0;
int shmemi_thread_level = SHMEM_THREAD_SINGLE;
int shmemi_private_mode = 0;

/* Before init the segments are empty and peer arrays point at one NULL,
 * so the inline translation needs no initialized check on its fast path. */
static char *shmemi_no_peer[1];
static fam_desc_t *shmemi_no_desc[1];
shmemi_seg shmemi_heap_seg = {0, 0, shmemi_no_peer, shmemi_no_desc, "symmetric heap", 0, NULL};
shmemi_seg shmemi_data_seg = {0, 0, shmemi_no_peer, shmemi_no_desc, "static/global data", 0, NULL};

struct shmemi_team shmemi_team_world = {0, 1, 1, 0, NULL, 0, NULL};
struct shmemi_team shmemi_team_shared = {0, 1, 1, 0, NULL, 0, NULL};
struct shmemi_ctx shmemi_ctx_default = {&shmemi_team_world, 0, 1, NULL};
/* What SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and SHMEM_CTX_DEFAULT are
 * (shmem.h): the objects themselves stay local to the library. */
struct shmemi_team *const shmemi_team_world_ptr = &shmemi_team_world;
struct shmemi_team *const shmemi_team_shared_ptr = &shmemi_team_shared;
struct shmemi_ctx *const shmemi_ctx_default_ptr = &shmemi_ctx_default;

/* Size of the part of each heap the layer keeps for itself (at its start). */
#define SHMEMI_INTERNAL_SIZE ((size_t)4 << 20)
/* Default user heap when SHMEM_SYMMETRIC_SIZE is unset: see shmemi_heap_size. */
#define SHMEMI_DEFAULT_HEAP ((size_t)64 << 20)
#define SHMEMI_PAGE ((size_t)4096)

static fam_region_t *shmemi_region;
static int shmemi_fam_owned;       /* shmem_init started the FAM instance */
static int shmemi_finalized;       /* shmem_finalize ran (init may not run again) */
static size_t shmemi_internal_used;
static pthread_mutex_t shmemi_internal_mu = PTHREAD_MUTEX_INITIALIZER;
static char shmemi_region_name[160];
static int shmemi_data_shared;     /* globals replaced by the data item mapping */
static void *shmemi_data_placeholder;
static size_t shmemi_user_heap_size;
static uint64_t *shmemi_exit_word; /* in PE 0's internal area: 0x100 | status */
static void *shmemi_heap_fixed; /* the heap's fixed address, when it got it */

/* Where every PE puts its own heap: one address for all, so a heap
 * pointer means the same object on every PE (as with Open MPI, whose
 * programs sometimes pass heap pointers around). 48 TiB: far from the
 * program, its brk heap and the mmap area of x86-64 and arm64 Linux. When
 * the range is taken the heap stays where fam_map put it: still
 * symmetric (same offsets), as the specification asks. */
#define SHMEMI_HEAP_VA ((uintptr_t)0x300000000000ULL)

/* Moves the heap's mapping hb (size bytes) to SHMEMI_HEAP_VA; returns
 * the heap's address. For a private heap (mapped = 0) a fresh anonymous
 * mapping is made there instead. */
static char *shmemi_fix_heap(char *hb, size_t size, int mapped)
{
    void *want = (void *)SHMEMI_HEAP_VA;
    if (((uintptr_t)hb & (SHMEMI_PAGE - 1)) != 0)
        return hb;
    void *r = mmap(want, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (r != want) {
        if (r != MAP_FAILED)
            munmap(r, size); /* a kernel without MAP_FIXED_NOREPLACE */
        return hb;
    }
    if (!mapped) {
        if (mmap(want, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
                 0) != want) {
            munmap(want, size);
            return hb;
        }
        munmap(hb, size);
        shmemi_heap_fixed = want;
        return want;
    }
    if (mremap(hb, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, want) == MAP_FAILED) {
        munmap(want, size);
        return hb;
    }
    /* fam_map's address stays taken (see shmemi_share_globals). */
    mmap(hb, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    shmemi_heap_fixed = want;
    return want;
}

/* heap.c */
void shmemi_heap_setup(void *base, size_t size);
static void *shmemi_internal_alloc_at_init(size_t n);

/* ---- errors ----------------------------------------------------------------- */

void shmemi_abort(const char *call, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "shmem: %s: %s (PE %d of %d); aborting the job\n", call, msg, shmemi_my_pe, shmemi_n_pes);
    fflush(stderr);
    /* The launcher (famrun) ends the whole job when one PE exits non-zero. */
    _exit(1);
}

void shmemi_check_init(const char *call)
{
    if (!shmemi_initialized)
        shmemi_abort(call, "called before shmem_init (or after shmem_finalize)");
}

void shmemi_check_pe(const char *call, int pe)
{
    shmemi_check_init(call);
    if (pe < 0 || pe >= shmemi_n_pes)
        shmemi_abort(call, "PE %d is out of range (the job has PEs 0 to %d)", pe, shmemi_n_pes - 1);
}

static int shmemi_in(const shmemi_seg *s, const void *addr, size_t len)
{
    size_t o = (uintptr_t)addr - s->base;
    return o < s->size && len <= s->size - o;
}

int shmemi_is_symmetric(const void *addr, size_t len)
{
    return shmemi_in(&shmemi_heap_seg, addr, len) || shmemi_in(&shmemi_data_seg, addr, len);
}

void shmemi_check_sym(const char *call, const void *addr, size_t len)
{
    shmemi_check_init(call);
    if (!shmemi_is_symmetric(addr, len))
        shmemi_abort(call,
                     "address %p (%zu bytes) is not symmetric: it is neither in the symmetric heap "
                     "(shmem_malloc) nor in the program's static/global data",
                     addr, len);
}

/* ---- environment --------------------------------------------------------------- */

static const char *shmemi_env(const char *a, const char *b)
{
    const char *v = getenv(a);
    if ((v == NULL || *v == 0) && b != NULL)
        v = getenv(b);
    return (v != NULL && *v != 0) ? v : NULL;
}

/* Parses an integer variable; -1 when absent or malformed. */
static long shmemi_env_long(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || *v == 0)
        return -1;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || *end != 0 || x < 0)
        return -1;
    return x;
}

/* Rank and size, from the first launcher convention present: famrun's
 * own, PMI, Slurm, Open MPI (the order the FAM core reads them in, whose
 * job barrier init relies on), then PMIx and MVAPICH; a singleton
 * otherwise. */
static void shmemi_rank_size(int *rank, int *size)
{
    static const char *pairs[][2] = {
        {"FAMRUN_RANK", "FAMRUN_SIZE"},
        {"PMI_RANK", "PMI_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMIX_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        long r = shmemi_env_long(pairs[i][0]), s = shmemi_env_long(pairs[i][1]);
        if (r >= 0 && s > 0) {
            if (r >= s || s > 1 << 20)
                shmemi_abort("shmem_init", "launcher variables %s=%ld and %s=%ld are inconsistent", pairs[i][0],
                             r, pairs[i][1], s);
            *rank = (int)r;
            *size = (int)s;
            return;
        }
    }
    *rank = 0;
    *size = 1;
}

/* The job's id, naming its FAM region. */
static void shmemi_job_id(char *out, size_t n, int size)
{
    const char *v;
    if ((v = shmemi_env("FAMRUN_JOB", NULL)) != NULL)
        snprintf(out, n, "%s", v);
    else if ((v = shmemi_env("PMIX_NAMESPACE", NULL)) != NULL)
        snprintf(out, n, "pmix-%s", v);
    else if ((v = shmemi_env("PMI_JOBID", NULL)) != NULL)
        snprintf(out, n, "pmi-%s", v);
    else if ((v = shmemi_env("SLURM_JOB_ID", NULL)) != NULL)
        snprintf(out, n, "slurm-%s.%s", v, shmemi_env("SLURM_STEP_ID", NULL) ? getenv("SLURM_STEP_ID") : "0");
    else if (size == 1)
        snprintf(out, n, "pid-%ld", (long)getpid());
    else
        shmemi_abort("shmem_init", "%d PEs but no job id in the environment (FAMRUN_JOB, PMIX_NAMESPACE, "
                     "PMI_JOBID or SLURM_JOB_ID): start the program with oshrun", size);
    for (char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '.' || *p == '_'))
            *p = '_';
}

/* SHMEM_SYMMETRIC_SIZE (or SMA_SYMMETRIC_SIZE): bytes with an optional
 * k/K/m/M/g/G/t/T suffix, a float allowed ("1.5G"). Unset: 64 MiB, not
 * Open MPI's 256 MiB: FAM backs an item's whole size with memory at
 * allocation (famd reserves it in its shm store), so the default is paid
 * per PE whether used or not; 64 MiB holds the usual tests and benchmarks
 * (1 MiB messages) and keeps a 4-PE job at 256 MiB of store. */
static size_t shmemi_heap_size(void)
{
    const char *name = "SHMEM_SYMMETRIC_SIZE";
    const char *v = getenv(name);
    if (v == NULL || *v == 0) {
        name = "SMA_SYMMETRIC_SIZE";
        v = getenv(name);
    }
    if (v == NULL || *v == 0)
        return SHMEMI_DEFAULT_HEAP;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (errno != 0 || end == v || *end != 0 || !(x >= 0) || isinf(x) || x * mult > 1e15)
        shmemi_abort("shmem_init", "%s=\"%s\" is not a size (bytes, optionally with a k, m, g or t suffix)",
                     name, v);
    size_t s = (size_t)(x * mult);
    return (s + SHMEMI_PAGE - 1) & ~(SHMEMI_PAGE - 1);
}

/* ---- static and global data ------------------------------------------------------- */

struct shmemi_range {
    uintptr_t lo, hi;
};

static int shmemi_phdr_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
    (void)sz;
    struct shmemi_range *r = arg;
    uintptr_t relro_end = 0, lo = 0, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO)
            relro_end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
            if (lo == 0 || a < lo)
                lo = a;
            if (b > hi)
                hi = b;
        }
    }
    relro_end = (relro_end + SHMEMI_PAGE - 1) & ~(uintptr_t)(SHMEMI_PAGE - 1);
    lo &= ~(uintptr_t)(SHMEMI_PAGE - 1);
    if (lo < relro_end)
        lo = relro_end;
    hi = (hi + SHMEMI_PAGE - 1) & ~(uintptr_t)(SHMEMI_PAGE - 1);
    if (hi > lo) {
        r->lo = lo;
        r->hi = hi;
    }
    return 1; /* the first object is the main program: stop */
}

/* Replaces the program's data range with the data item mapped at m. */
static int shmemi_share_globals(char *m)
{
    size_t n = shmemi_data_seg.size;
    void *at = (void *)shmemi_data_seg.base;
    memcpy(m, at, n);
    if (mremap(m, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED)
        return -1;
    /* Keep fam_map's address taken, so that the library retiring its
     * mapping there (fam_unmap, fam_finalize) finds our placeholder and
     * never memory some later mmap put there. */
    shmemi_data_placeholder = mmap(m, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    return 0;
}

/* Puts private memory with the current contents back under the globals. */
static void shmemi_unshare_globals(void)
{
    if (!shmemi_data_shared)
        return;
    size_t n = shmemi_data_seg.size;
    void *at = (void *)shmemi_data_seg.base;
    void *tmp = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tmp == MAP_FAILED)
        shmemi_abort("shmem_finalize", "cannot allocate memory for the program's globals: %s", strerror(errno));
    memcpy(tmp, at, n);
    if (mremap(tmp, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED)
        shmemi_abort("shmem_finalize", "cannot put the program's globals back: %s", strerror(errno));
    shmemi_data_shared = 0;
}

/* ---- init and finalize ---------------------------------------------------------------- */

static void shmemi_fam_fail(const char *call, const char *what)
{
    shmemi_abort(call, "%s: %s", what, fam_errmsg());
}

static fam_desc_t *shmemi_lookup_item(const char *call, char kind, int pe, fam_desc_t *own)
{
    if (pe == shmemi_my_pe)
        return own;
    char name[32];
    snprintf(name, sizeof name, "%c%d", kind, pe);
    fam_desc_t *d = fam_lookup(name, shmemi_region_name);
    if (d == NULL)
        shmemi_fam_fail(call, "looking up a peer's symmetric memory");
    return d;
}

/* Maps each PE's item of seg; returns how many could be mapped. */
static int shmemi_map_seg(shmemi_seg *s, int self_mapped)
{
    int mapped = 0;
    for (int pe = 0; pe < shmemi_n_pes; pe++) {
        if (pe == shmemi_my_pe && self_mapped) {
            s->peer[pe] = (char *)s->base;
            mapped++;
            continue;
        }
        if (pe == shmemi_my_pe)
            continue;
        s->peer[pe] = fam_map(s->desc[pe]);
        if (s->peer[pe] != NULL)
            mapped++;
    }
    return mapped;
}

static void shmemi_setup(const char *call)
{
    int rank, size;
    shmemi_rank_size(&rank, &size);
    shmemi_my_pe = rank;
    shmemi_n_pes = size;
    char job[96];
    shmemi_job_id(job, sizeof job, size);
    snprintf(shmemi_region_name, sizeof shmemi_region_name, "shmem.%s", job);
    shmemi_user_heap_size = shmemi_heap_size();
    size_t heap = shmemi_user_heap_size + SHMEMI_INTERNAL_SIZE;

    struct shmemi_range r = {0, 0};
    dl_iterate_phdr(shmemi_phdr_cb, &r);
    size_t data = r.hi - r.lo;

    if (fam_initialize("default", NULL) == 0)
        shmemi_fam_owned = 1;
    else if (fam_errcode() != FAM_EINVAL || fam_barrier_all() != 0)
        shmemi_fam_fail(call, "starting OpenFAM");
    /* The job barrier below is the FAM core's: it must count the same PEs. */
    const int *fid = fam_get_option("PE_ID"), *fcount = fam_get_option("PE_COUNT");
    if (fid != NULL && fcount != NULL && (*fid != rank || *fcount != size))
        shmemi_abort(call,
                     "the launcher's environment gives PE %d of %d but OpenFAM sees PE %d of %d (it reads "
                     "FAMRUN_*, PMI_*, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_*): start the program with oshrun",
                     rank, size, *fid, *fcount);
    free((void *)fid);
    free((void *)fcount);

    /* One region per job: PE 0 makes it, the others look it up. */
    if (rank == 0) {
        uint64_t need = (uint64_t)size * (heap + data + 2 * SHMEMI_PAGE) + (1 << 20);
        /* Volatile: the heaps are scratch memory of one job, and famd
         * keeps volatile regions on tmpfs (/dev/shm), where a shared
         * mapping is plain memory; persistent ones are files on disk,
         * whose dirty-page writeback slows every large put. */
        fam_region_attr_t attr = {FAM_REDUNDANCY_DEFAULT, FAM_MEMORY_VOLATILE, FAM_INTERLEAVE_DEFAULT,
                                  FAM_PERMISSION_DEFAULT};
        shmemi_region = fam_create_region(shmemi_region_name, need, 0600, &attr);
        if (shmemi_region == NULL && fam_errcode() == FAM_EEXIST && size == 1 &&
            strncmp(job, "pid-", 4) == 0) {
            /* A singleton's region is named after its process id: one left
             * by a dead process of the same id is stale. */
            fam_region_t *old = fam_lookup_region(shmemi_region_name);
            if (old != NULL && fam_destroy_region(old) == 0)
                shmemi_region = fam_create_region(shmemi_region_name, need, 0600, &attr);
        }
        if (shmemi_region == NULL)
            shmemi_fam_fail(call, "creating the job's FAM region for the symmetric heaps");
    }
    if (fam_barrier_all() != 0)
        shmemi_fam_fail(call, "waiting for the other PEs");
    if (rank != 0 && (shmemi_region = fam_lookup_region(shmemi_region_name)) == NULL)
        shmemi_fam_fail(call, "looking up the job's FAM region");

    char name[32];
    snprintf(name, sizeof name, "h%d", rank);
    fam_desc_t *hown = fam_allocate(name, heap, 0600, shmemi_region);
    if (hown == NULL)
        shmemi_fam_fail(call, "allocating this PE's symmetric heap (SHMEM_SYMMETRIC_SIZE)");
    fam_desc_t *down = NULL;
    if (data > 0) {
        snprintf(name, sizeof name, "d%d", rank);
        if ((down = fam_allocate(name, data, 0600, shmemi_region)) == NULL)
            shmemi_fam_fail(call, "allocating this PE's copy of the static/global data");
    }
    if (fam_barrier_all() != 0)
        shmemi_fam_fail(call, "waiting for the other PEs");

    shmemi_heap_seg.peer = calloc(size, sizeof(char *));
    shmemi_heap_seg.desc = calloc(size, sizeof(fam_desc_t *));
    shmemi_data_seg.peer = calloc(size, sizeof(char *));
    shmemi_data_seg.desc = calloc(size, sizeof(fam_desc_t *));
    if (!shmemi_heap_seg.peer || !shmemi_heap_seg.desc || !shmemi_data_seg.peer || !shmemi_data_seg.desc)
        shmemi_abort(call, "out of memory");
    for (int pe = 0; pe < size; pe++) {
        shmemi_heap_seg.desc[pe] = shmemi_lookup_item(call, 'h', pe, hown);
        if (data > 0)
            shmemi_data_seg.desc[pe] = shmemi_lookup_item(call, 'd', pe, down);
    }

    /* The heap. fam_map works for every item of the job on this host or
     * for none (it depends on where the region's memory is: famd's store
     * or memory servers), so the own mapping decides. */
    char *hb = fam_map(hown);
    if (hb == NULL) {
        /* Memory servers (famrun --servers K) or another host: every
         * access through shmem calls, to this PE's own heap too, goes
         * through the data path to the item, the one copy. The local
         * range the user's pointers point into is a private buffer that
         * is not that copy: load/store access to the heap is then not
         * coherent with peers' puts (shmem_ptr returns NULL, as the spec
         * allows; wait_until and test read the item). */
        hb = mmap(NULL, heap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        char *twin = mmap(NULL, heap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (hb == MAP_FAILED || twin == MAP_FAILED)
            shmemi_abort(call, "cannot reserve 2 x %zu bytes of address space for the heap", heap);
        hb = shmemi_fix_heap(hb, heap, 0);
        shmemi_heap_seg.base = (uintptr_t)hb;
        shmemi_heap_seg.size = heap;
        shmemi_heap_seg.priv = 1;
        shmemi_heap_seg.twin = twin;
        shmemi_private_mode = 1;
    } else {
        hb = shmemi_fix_heap(hb, heap, 1);
        shmemi_heap_seg.base = (uintptr_t)hb;
        shmemi_heap_seg.size = heap;
        shmemi_map_seg(&shmemi_heap_seg, 1);
    }

    if (data > 0) {
        shmemi_data_seg.base = r.lo;
        shmemi_data_seg.size = data;
        char *m = fam_map(down);
        if (m != NULL && ((uintptr_t)m & (SHMEMI_PAGE - 1)) == 0 && shmemi_share_globals(m) == 0) {
            shmemi_data_shared = 1;
            shmemi_map_seg(&shmemi_data_seg, 1);
        } else {
            /* Private mode for the globals: the item is their shared
             * copy, filled now and exchanged at sync points. */
            if (m != NULL)
                fam_unmap(m, down);
            shmemi_data_seg.priv = 1;
            shmemi_private_mode = 1;
            if ((shmemi_data_seg.twin = malloc(data)) == NULL)
                shmemi_abort(call, "out of memory");
            memcpy(shmemi_data_seg.twin, (void *)r.lo, data);
            if (fam_put_blocking(shmemi_data_seg.twin, down, 0, data) != 0)
                shmemi_fam_fail(call, "copying the static/global data to this PE's item");
        }
    }

    /* The shared team: the PEs whose heaps are mapped here. Contiguous
     * (all or none on one host for famrun jobs); otherwise just this PE. */
    int all = 1;
    for (int pe = 0; pe < size; pe++)
        if (shmemi_heap_seg.peer[pe] == NULL)
            all = 0;
    shmemi_team_world = (struct shmemi_team){0, 1, size, rank, NULL, 0, NULL};
    if (all)
        shmemi_team_shared = (struct shmemi_team){0, 1, size, rank, &shmemi_team_world, 0, NULL};
    else
        shmemi_team_shared = (struct shmemi_team){rank, 1, 1, 0, &shmemi_team_world, 0, NULL};

    shmemi_internal_used = 0;
    shmemi_exit_word = shmemi_internal_alloc_at_init(sizeof(uint64_t));
    shmemi_heap_setup((char *)hb + SHMEMI_INTERNAL_SIZE, shmemi_user_heap_size);
}

/* A PE leaving with status 0 without shmem_finalize is finalized, as the
 * specification asks. A PE leaving with another status is failing: no
 * collective finalize (its peers may be anywhere), famrun ends the job. */
static void shmemi_on_exit(int status, void *arg)
{
    (void)arg;
    if (shmemi_initialized && status == 0)
        shmem_finalize();
}

int shmem_init_thread(int requested, int *provided)
{
    static const char call[] = "shmem_init_thread";
    if (requested != SHMEM_THREAD_SINGLE && requested != SHMEM_THREAD_FUNNELED &&
        requested != SHMEM_THREAD_SERIALIZED && requested != SHMEM_THREAD_MULTIPLE)
        shmemi_abort(call, "thread level %d is not one of SHMEM_THREAD_SINGLE, _FUNNELED, _SERIALIZED, _MULTIPLE",
                     requested);
    if (shmemi_initialized) {
        if (provided != NULL)
            *provided = shmemi_thread_level;
        return 0;
    }
    if (shmemi_finalized)
        shmemi_abort(call, "called after shmem_finalize (OpenSHMEM allows one initialization per program)");
    shmemi_setup(call);
    /* Every level is provided: the data path is memcpy and CPU atomics on
     * mapped memory or the thread-safe FAM library, and the allocator and
     * internal allocator take locks. */
    shmemi_thread_level = requested;
    if (provided != NULL)
        *provided = requested;
    shmemi_initialized = 1;
    static int registered;
    if (!registered) {
        on_exit(shmemi_on_exit, NULL);
        registered = 1;
    }
    if (shmemi_my_pe == 0 && getenv("SHMEM_VERSION") != NULL)
        printf("OpenSHMEM %d.%d (%s)\n", SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, SHMEM_VENDOR_STRING);
    if (shmemi_my_pe == 0 && getenv("SHMEM_INFO") != NULL)
        printf("%s, OpenSHMEM %d.%d on OpenFAM. Environment:\n"
               "  SHMEM_SYMMETRIC_SIZE  bytes of symmetric heap per PE (k/m/g/t suffixes; default 64M;\n"
               "                        SMA_SYMMETRIC_SIZE is the old name); this job: %zu\n"
               "  SHMEM_VERSION         print the library version at start\n"
               "  SHMEM_INFO            print this\n"
               "Memory: %s\n",
               SHMEM_VENDOR_STRING, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, shmemi_user_heap_size,
               shmemi_private_mode ? "private copies exchanged with FAM items at sync points (items not mappable)"
                                   : "FAM items mapped by every PE (shared memory)");
    fflush(stdout);
    /* Before the barrier, which uses the world team's sync state. */
    shmemi_coll_init();
    shmemi_barrier_all();
    return 0;
}

void shmem_init(void)
{
    shmem_init_thread(SHMEM_THREAD_SINGLE, NULL);
}

void shmem_query_thread(int *provided)
{
    shmemi_check_init("shmem_query_thread");
    if (provided != NULL)
        *provided = shmemi_thread_level;
}

void shmem_finalize(void)
{
    if (!shmemi_initialized)
        return;
    shmemi_barrier_all();
    shmemi_coll_fini();
    shmemi_unshare_globals();
    /* The moved heap is ours to unmap (the library retires only the
     * placeholder at fam_map's address). */
    if (shmemi_heap_fixed != NULL) {
        munmap(shmemi_heap_fixed, shmemi_heap_seg.size);
        shmemi_heap_fixed = NULL;
    }
    shmemi_initialized = 0;
    shmemi_finalized = 1;
    /* Every PE is done with every heap (barrier above), but a peer may
     * still be inside the barrier reading PE 0's counter: the region goes
     * only after a second rendezvous that does not use the heaps. */
    if (fam_barrier_all() == 0 && shmemi_my_pe == 0 && shmemi_region != NULL)
        fam_destroy_region(shmemi_region);
    if (shmemi_fam_owned)
        fam_finalize("default");
    /* Addresses stay "symmetric" no more: segments empty again. */
    shmemi_heap_seg.base = shmemi_data_seg.base = 0;
    shmemi_heap_seg.size = shmemi_data_seg.size = 0;
    shmemi_heap_seg.peer = shmemi_data_seg.peer = shmemi_no_peer;
    shmemi_heap_seg.desc = shmemi_data_seg.desc = shmemi_no_desc;
}

void shmem_global_exit(int status)
{
    fflush(stdout);
    fflush(stderr);
    /* famrun ends the other PEs when one exits with a non-zero status and
     * passes that status on. Exit 0 would end only this PE: the word in PE
     * 0's internal area tells PEs blocked in barriers and waits (their spin
     * loops call shmemi_yield) to exit with the same status. */
    if (shmemi_initialized && shmemi_exit_word != NULL) {
        uint64_t *w = shmemi_ptr(shmemi_exit_word, 0);
        uint64_t v = 0x100 | (uint64_t)(status & 0xff);
        if (w != NULL)
            __atomic_store_n(w, v, __ATOMIC_RELEASE);
        else
            fam_set_uint64(shmemi_heap_seg.desc[0], (uintptr_t)shmemi_exit_word - shmemi_heap_seg.base, v);
    }
    _exit(status);
}

void shmemi_yield(void)
{
    sched_yield();
    if (!shmemi_initialized || shmemi_exit_word == NULL)
        return;
    uint64_t *w = shmemi_ptr(shmemi_exit_word, 0);
    uint64_t v = 0;
    if (w != NULL)
        v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    else if (shmemi_heap_seg.desc[0] != NULL)
        fam_fetch_uint64(shmemi_heap_seg.desc[0], (uintptr_t)shmemi_exit_word - shmemi_heap_seg.base, &v);
    if (v & 0x100) {
        fflush(stdout);
        fflush(stderr);
        _exit((int)(v & 0xff));
    }
}

int shmem_my_pe(void)
{
    return shmemi_initialized ? shmemi_my_pe : -1;
}

int shmem_n_pes(void)
{
    return shmemi_initialized ? shmemi_n_pes : -1;
}

int shmem_pe_accessible(int pe)
{
    return shmemi_initialized && pe >= 0 && pe < shmemi_n_pes;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    if (!shmem_pe_accessible(pe))
        return 0;
    if (shmemi_in(&shmemi_heap_seg, addr, 1))
        return 1;
    return shmemi_in(&shmemi_data_seg, addr, 1);
}

void *shmemi_ptr(const void *addr, int pe)
{
    if (!shmemi_initialized || pe < 0 || pe >= shmemi_n_pes)
        return NULL;
    const shmemi_seg *s = shmemi_in(&shmemi_heap_seg, addr, 1) ? &shmemi_heap_seg
                          : shmemi_in(&shmemi_data_seg, addr, 1) ? &shmemi_data_seg
                                                                 : NULL;
    if (s == NULL || s->peer[pe] == NULL)
        return NULL;
    return s->peer[pe] + ((uintptr_t)addr - s->base);
}

void *shmem_ptr(const void *dest, int pe)
{
    shmemi_check_init("shmem_ptr");
    /* This PE's own object is always at its own address (in private mode
     * too: local memory is this PE's copy). */
    if (pe == shmemi_my_pe && shmemi_is_symmetric(dest, 1))
        return (void *)dest;
    return shmemi_ptr(dest, pe);
}

void shmem_info_get_version(int *major, int *minor)
{
    if (major)
        *major = SHMEM_MAJOR_VERSION;
    if (minor)
        *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name)
{
    if (name) {
        strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
        name[SHMEM_MAX_NAME_LEN - 1] = 0;
    }
}

/* shmemi_internal_alloc during shmem_init (before shmemi_initialized). */
static void *shmemi_internal_alloc_at_init(size_t n)
{
    size_t at = (shmemi_internal_used + 63) & ~(size_t)63;
    shmemi_internal_used = at + n;
    return (char *)shmemi_heap_seg.base + at;
}

void *shmemi_internal_alloc(size_t n)
{
    pthread_mutex_lock(&shmemi_internal_mu);
    size_t at = (shmemi_internal_used + 63) & ~(size_t)63;
    if (!shmemi_initialized && shmemi_heap_seg.size == 0) {
        pthread_mutex_unlock(&shmemi_internal_mu);
        shmemi_abort("shmemi_internal_alloc", "called before shmem_init");
    }
    if (n > SHMEMI_INTERNAL_SIZE || at > SHMEMI_INTERNAL_SIZE - n) {
        pthread_mutex_unlock(&shmemi_internal_mu);
        shmemi_abort("shmemi_internal_alloc", "the layer's reserve of %zu bytes is exhausted (%zu more asked)",
                     SHMEMI_INTERNAL_SIZE, n);
    }
    shmemi_internal_used = at + n;
    pthread_mutex_unlock(&shmemi_internal_mu);
    return (char *)shmemi_heap_seg.base + at;
}

/* ---- the data path ------------------------------------------------------------------ */

char *shmemi_xlate_slow(const char *call, const void *addr, size_t len, int pe, shmemi_seg **seg, size_t *off)
{
    if ((unsigned)pe >= (unsigned)shmemi_n_pes)
        shmemi_check_pe(call, pe);
    shmemi_seg *s = &shmemi_heap_seg;
    if (!shmemi_in(s, addr, len)) {
        s = &shmemi_data_seg;
        if (!shmemi_in(s, addr, len)) {
            shmemi_check_init(call);
            shmemi_check_sym(call, addr, len);
        }
    }
    size_t o = (uintptr_t)addr - s->base;
    if (s->peer[pe] != NULL)
        return s->peer[pe] + o;
    *seg = s;
    *off = o;
    return NULL;
}

static void shmemi_no_path(const char *call, shmemi_seg *seg, int pe)
{
    if (seg->desc[pe] == NULL)
        shmemi_abort(call, "the %s of PE %d is not reachable from this PE", seg->what, pe);
}

/* Private mode: sends the bytes of [lo, hi) of seg the program changed
 * since the last exchange (local differs from twin) to this PE's item.
 * Only bytes that differ are written, never their neighbours, so bytes
 * peers put into the item meanwhile survive. */
static void shmemi_push_range(shmemi_seg *s, size_t lo, size_t hi)
{
    const char *loc = (const char *)s->base;
    char *tw = s->twin;
    size_t i = lo;
    while (i < hi) {
        while (i + 8 <= hi) {
            uint64_t a, b;
            memcpy(&a, loc + i, 8);
            memcpy(&b, tw + i, 8);
            if (a != b)
                break;
            i += 8;
        }
        while (i < hi && loc[i] == tw[i])
            i++;
        if (i >= hi)
            break;
        size_t j = i;
        while (j < hi && loc[j] != tw[j])
            j++;
        memcpy(tw + i, loc + i, j - i);
        if (fam_put_blocking(tw + i, s->desc[shmemi_my_pe], i, j - i) != 0)
            shmemi_abort("shmem_barrier_all", "writing this PE's %s to its FAM item: %s", s->what, fam_errmsg());
        i = j;
    }
}

/* Private mode: copies [lo, hi) of this PE's item into local memory. */
static void shmemi_pull_range(shmemi_seg *s, size_t lo, size_t hi)
{
    if (hi <= lo)
        return;
    if (fam_get_blocking(s->twin + lo, s->desc[shmemi_my_pe], lo, hi - lo) != 0)
        shmemi_abort("shmem_barrier_all", "reading this PE's %s from its FAM item: %s", s->what, fam_errmsg());
    memcpy((char *)s->base + lo, s->twin + lo, hi - lo);
}

/* The ranges private mode exchanges: the heap's used internal reserve and
 * its allocated part, and all of the static data. */
static pthread_mutex_t shmemi_exchange_mu = PTHREAD_MUTEX_INITIALIZER;

static void shmemi_exchange(int push)
{
    /* Threads (SHMEM_THREAD_MULTIPLE) waiting at once share the twins. */
    pthread_mutex_lock(&shmemi_exchange_mu);
    struct {
        shmemi_seg *s;
        size_t lo, hi;
    } r[3] = {
        {&shmemi_heap_seg, 0, shmemi_internal_used},
        {&shmemi_heap_seg, SHMEMI_INTERNAL_SIZE, SHMEMI_INTERNAL_SIZE + shmemi_heap_hwm},
        {&shmemi_data_seg, 0, shmemi_data_seg.size},
    };
    for (int i = 0; i < 3; i++) {
        if (!r[i].s->priv)
            continue;
        if (push)
            shmemi_push_range(r[i].s, r[i].lo, r[i].hi);
        else
            shmemi_pull_range(r[i].s, r[i].lo, r[i].hi);
    }
    pthread_mutex_unlock(&shmemi_exchange_mu);
}

void shmemi_sync_push(void)
{
    if (shmemi_private_mode)
        shmemi_exchange(1);
}

void shmemi_sync_pull(void)
{
    if (shmemi_private_mode)
        shmemi_exchange(0);
}

void shmemi_wait_read(const void *ivar, void *out, size_t n)
{
    shmemi_seg *s = shmemi_in(&shmemi_heap_seg, ivar, n) ? &shmemi_heap_seg
                    : shmemi_in(&shmemi_data_seg, ivar, n) ? &shmemi_data_seg
                                                           : NULL;
    if (s == NULL || !s->priv) {
        memcpy(out, ivar, n); /* callers load atomically where it matters */
        return;
    }
    size_t off = (uintptr_t)ivar - s->base;
    if (fam_get_blocking(out, s->desc[shmemi_my_pe], off, n) != 0)
        shmemi_abort("shmem_wait_until", "reading this PE's %s from its FAM item: %s", s->what, fam_errmsg());
}

void shmemi_slow_put(const char *call, shmemi_seg *seg, size_t off, const void *src, size_t n, int pe)
{
    if (seg->priv && pe == shmemi_my_pe) {
        memmove((char *)seg->base + off, src, n);
        return;
    }
    shmemi_no_path(call, seg, pe);
    if (fam_put_blocking((void *)src, seg->desc[pe], off, n) != 0)
        shmemi_abort(call, "writing %zu bytes to PE %d: %s", n, pe, fam_errmsg());
}

void shmemi_slow_get(const char *call, shmemi_seg *seg, size_t off, void *dst, size_t n, int pe)
{
    if (seg->priv && pe == shmemi_my_pe) {
        memmove(dst, (char *)seg->base + off, n);
        return;
    }
    shmemi_no_path(call, seg, pe);
    if (fam_get_blocking(dst, seg->desc[pe], off, n) != 0)
        shmemi_abort(call, "reading %zu bytes from PE %d: %s", n, pe, fam_errmsg());
}

#define SHMEMI_SLOW_AMO(W)                                                                                    \
    uint##W##_t shmemi_slow_amo##W(const char *call, shmemi_seg *seg, size_t off, int op, uint##W##_t v,      \
                                   uint##W##_t cmp, int pe)                                                    \
    {                                                                                                          \
        shmemi_no_path(call, seg, pe);                                                                         \
        /* An atomic on this PE's own word in private mode: the item is   \
         * where peers' atomics meet, so the local value goes there first \
         * and the result comes back. */                                   \
        int self = seg->priv && pe == shmemi_my_pe;                                                            \
        if (self) {                                                                                            \
            /* One at a time with the other exchanges: a thread's pull   \
             * half done must not look like a local store to a push. */  \
            pthread_mutex_lock(&shmemi_exchange_mu);                                                           \
            shmemi_push_range(seg, off, off + W / 8);                                                          \
        }                                                                                                      \
        fam_desc_t *d = seg->desc[pe];                                                                         \
        uint##W##_t old = 0;                                                                                   \
        int rc;                                                                                                \
        switch (op) {                                                                                          \
        case SHMEMI_AMO_FETCH: rc = fam_fetch_uint##W(d, off, &old); break;                                    \
        case SHMEMI_AMO_SET: rc = fam_set_uint##W(d, off, v); break;                                           \
        case SHMEMI_AMO_SWAP: rc = fam_swap_uint##W(d, off, v, &old); break;                                   \
        case SHMEMI_AMO_CSWAP: rc = fam_compare_swap_uint##W(d, off, cmp, v, &old); break;                     \
        case SHMEMI_AMO_ADD: rc = fam_fetch_add_uint##W(d, off, v, &old); break;                               \
        case SHMEMI_AMO_AND: rc = fam_fetch_and_uint##W(d, off, v, &old); break;                               \
        case SHMEMI_AMO_OR: rc = fam_fetch_or_uint##W(d, off, v, &old); break;                                 \
        default: rc = fam_fetch_xor_uint##W(d, off, v, &old); break;                                           \
        }                                                                                                      \
        if (rc != 0)                                                                                           \
            shmemi_abort(call, "atomic on PE %d: %s", pe, fam_errmsg());                                       \
        if (self) {                                                                                            \
            shmemi_pull_range(seg, off, off + W / 8);                                                          \
            pthread_mutex_unlock(&shmemi_exchange_mu);                                                         \
        }                                                                                                      \
        return old;                                                                                            \
    }
SHMEMI_SLOW_AMO(32)
SHMEMI_SLOW_AMO(64)

void shmemi_put(void *dest, const void *src, size_t n, int pe)
{
    shmemi_put_c("shmemi_put", dest, src, n, pe);
}

void shmemi_get(void *dest, const void *src, size_t n, int pe)
{
    shmemi_get_c("shmemi_get", dest, src, n, pe);
}

void shmemi_iput_c(const char *call, void *dest, const void *src, ptrdiff_t tst, ptrdiff_t sst, size_t nelems,
                   size_t size, int pe)
{
    if (nelems == 0)
        return;
    const char *s = src;
    char *d = dest;
    for (size_t i = 0; i < nelems; i++)
        shmemi_put_c(call, d + (ptrdiff_t)i * tst * (ptrdiff_t)size, s + (ptrdiff_t)i * sst * (ptrdiff_t)size,
                     size, pe);
}

void shmemi_iget_c(const char *call, void *dest, const void *src, ptrdiff_t tst, ptrdiff_t sst, size_t nelems,
                   size_t size, int pe)
{
    if (nelems == 0)
        return;
    const char *s = src;
    char *d = dest;
    for (size_t i = 0; i < nelems; i++)
        shmemi_get_c(call, d + (ptrdiff_t)i * tst * (ptrdiff_t)size, s + (ptrdiff_t)i * sst * (ptrdiff_t)size,
                     size, pe);
}

/* ---- ordering ---------------------------------------------------------------------- */

void shmemi_quiet(void)
{
    /* Stores to mapped peers are complete once globally visible: a full
     * fence. The data path's transfers are blocking. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void shmem_quiet(void)
{
    shmemi_quiet();
}

void shmem_fence(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    (void)shmemi_ctx_pe("shmem_ctx_quiet", ctx, 0);
    shmemi_quiet();
}

void shmem_ctx_fence(shmem_ctx_t ctx)
{
    (void)shmemi_ctx_pe("shmem_ctx_fence", ctx, 0);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- contexts ------------------------------------------------------------------------ */

int shmemi_ctx_create(struct shmemi_team *team, long options, struct shmemi_ctx **out)
{
    if (team == NULL || out == NULL)
        return -1;
    struct shmemi_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return -1;
    c->team = team;
    c->options = options;
    c->valid = 1;
    *out = c;
    return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    shmemi_check_init("shmem_ctx_create");
    if (ctx == NULL)
        shmemi_abort("shmem_ctx_create", "ctx is NULL");
    if (shmemi_ctx_create(&shmemi_team_world, options, ctx) != 0) {
        *ctx = SHMEM_CTX_INVALID;
        return 1;
    }
    return 0;
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    if (ctx == SHMEM_CTX_INVALID || ctx == SHMEM_CTX_DEFAULT)
        return;
    shmemi_quiet();
    ctx->valid = 0;
    free(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    if (team == NULL)
        return -1;
    if (ctx == SHMEM_CTX_INVALID || !ctx->valid) {
        *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    *team = ctx->team;
    return 0;
}
