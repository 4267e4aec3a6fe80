/*
 * stencil: a 1-D heat equation, u[i] <- u[i] + K (u[i-1] - 2 u[i] + u[i+1]),
 * on G points split in equal blocks over the PEs (fixed ends). Each step
 * every PE puts its edge points into its neighbours' halo cells of a
 * symmetric heap array, then a barrier makes them visible. At the end the
 * blocks are collected on PE 0 (getmem) and compared with the same
 * computation done serially there; exit status 1 on any difference.
 *   oshcc -o stencil stencil.c && oshrun -np 4 ./stencil
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define G 1200    /* points in all */
#define STEPS 500
#define K 0.25

static double init(int g)
{
    return g == G / 3 ? 100.0 : (g % 7) * 0.5;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (G % n != 0 && me == 0)
        fprintf(stderr, "stencil: %d points do not split over %d PEs; the last PE takes the rest\n",
                G, n);
    int per = G / n;
    int lo = me * per, cnt = me == n - 1 ? G - lo : per;
    int maxcnt = G - (n - 1) * per > per ? G - (n - 1) * per : per;
    /* u[0] and u[cnt+1] are the halo cells; two buffers, swapped each step */
    double *u = shmem_calloc((size_t)maxcnt + 2, sizeof(double));
    double *v = shmem_calloc((size_t)maxcnt + 2, sizeof(double));
    for (int i = 1; i <= cnt; i++)
        u[i] = init(lo + i - 1);
    shmem_barrier_all();

    for (int s = 0; s < STEPS; s++) {
        /* my first point is my left neighbour's right halo, and so on */
        if (me > 0) {
            int lcnt = per; /* every PE but the last has per points */
            shmem_double_p(&u[lcnt + 1], u[1], me - 1);
        }
        if (me < n - 1)
            shmem_double_p(&u[0], u[cnt], me + 1);
        shmem_barrier_all();
        for (int i = 1; i <= cnt; i++) {
            int g = lo + i - 1;
            if (g == 0 || g == G - 1)
                v[i] = u[i]; /* fixed ends */
            else
                v[i] = u[i] + K * (u[i - 1] - 2 * u[i] + u[i + 1]);
        }
        double *t = u;
        u = v;
        v = t;
        /* nobody may write the halo of the next step's array before all
         * have read this step's values */
        shmem_barrier_all();
    }

    int rc = 0;
    if (me == 0) {
        double *par = malloc(sizeof(double) * G), *ser = malloc(sizeof(double) * G),
               *nx = malloc(sizeof(double) * G);
        for (int p = 0; p < n; p++) {
            int plo = p * per, pcnt = p == n - 1 ? G - plo : per;
            shmem_getmem(&par[plo], &u[1], sizeof(double) * pcnt, p);
        }
        for (int g = 0; g < G; g++)
            ser[g] = init(g);
        for (int s = 0; s < STEPS; s++) {
            for (int g = 0; g < G; g++)
                nx[g] = (g == 0 || g == G - 1) ? ser[g]
                                               : ser[g] + K * (ser[g - 1] - 2 * ser[g] + ser[g + 1]);
            memcpy(ser, nx, sizeof(double) * G);
        }
        double maxdiff = 0;
        for (int g = 0; g < G; g++)
            if (fabs(par[g] - ser[g]) > maxdiff)
                maxdiff = fabs(par[g] - ser[g]);
        rc = maxdiff != 0.0;
        printf("stencil: %d points, %d steps, %d PEs: largest difference from the serial run %g (%s)\n",
               G, STEPS, n, maxdiff, rc ? "FAIL" : "ok");
        free(par);
        free(ser);
        free(nx);
    }
    shmem_barrier_all();
    shmem_free(v);
    shmem_free(u);
    shmem_finalize();
    return rc;
}
