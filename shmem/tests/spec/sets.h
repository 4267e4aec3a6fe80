/*
 * sets.h: the active sets (PE_start, logPE_stride, PE_size) the 1.4
 * collective tests run over, for any PE count: all PEs, the even PEs,
 * PEs 1..n-1 (an odd size when n is even), and the odd PEs.
 */
#ifndef SHTEST_SETS_H
#define SHTEST_SETS_H

struct sht_set {
    int start, logstride, size;
    const char *name;
};

static int sht_sets(struct sht_set *s, int n)
{
    int k = 0;
    s[k++] = (struct sht_set){0, 0, n, "all"};
    if (n >= 2)
        s[k++] = (struct sht_set){0, 1, (n + 1) / 2, "even"};
    if (n >= 3)
        s[k++] = (struct sht_set){1, 0, n - 1, "1..n-1"};
    if (n >= 2)
        s[k++] = (struct sht_set){1, 1, n / 2, "odd"};
    return k;
}

/* This PE's index in the set, or -1. */
static int sht_set_index(const struct sht_set *s, int pe)
{
    int d = pe - s->start, st = 1 << s->logstride;
    if (d < 0 || d % st != 0 || d / st >= s->size)
        return -1;
    return d / st;
}

static int sht_set_pe(const struct sht_set *s, int idx)
{
    return s->start + idx * (1 << s->logstride);
}
#endif
