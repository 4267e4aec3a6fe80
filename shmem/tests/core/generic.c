/* generic: the C11 generic forms, with and without a context (chosen by
 * the argument count), on RMA, atomics, wait and test. Compiled -std=c11
 * -pedantic like every core test. Exit status 1 on a mismatch. */
#include <shmem.h>
#include <stdio.h>
static long x; static int iv[2]; static double d;
int main(void){
  shmem_init(); int me = shmem_my_pe(), n = shmem_n_pes(), r = (me+1)%n;
  long v = 1; shmem_ctx_t c; shmem_ctx_create(0, &c);
  shmem_put(&x, &v, 1, r); shmem_put(c, &x, &v, 1, r); shmem_p(c, &x, 2L, r); shmem_atomic_add(&x, 1L, r);
  shmem_atomic_add(c, &x, 1L, r); shmem_atomic_set(&d, 1.5, r); shmem_ctx_quiet(c);
  shmem_barrier_all();
  long g = shmem_g(c, &x, r); long f = shmem_atomic_fetch(&x, me); double dd = shmem_atomic_fetch(c, &d, me);
  shmem_p(&iv[1], 3, r); shmem_wait_until(&iv[1], SHMEM_CMP_EQ, 3); size_t k = shmem_test_any(iv, 2, NULL, SHMEM_CMP_EQ, 3);
  printf("%d: %ld %ld %g %zu\n", me, g, f, dd, k); shmem_ctx_destroy(c); shmem_finalize(); return !(g == 4 && f == 4 && dd == 1.5 && k == 1);}
