/*
 * reduce_vals.h: source values and the serial combination for the
 * reduction tests (1.4 to_all and 1.5 team reduce): small integers, so
 * every type (char to long double, complex) holds sums and products
 * exactly, and every op sees different values on different PEs.
 */
#ifndef SHTEST_REDUCE_VALS_H
#define SHTEST_REDUCE_VALS_H

#define RV_AND(T, pe, i) ((T)(0x7f & ~(1 << (((pe) + (i)) % 7))))
#define RV_OR(T, pe, i) ((T)(1 << (((pe) + (i)) % 7)))
#define RV_XOR(T, pe, i) ((T)((((pe) + 1) * ((i) + 3)) & 0x7f))
#define RV_MIN(T, pe, i) ((T)((((pe) * 7 + (i) * 3) % 50) - ((T)-1 < (T)0 ? 20 : 0)))
#define RV_MAX(T, pe, i) RV_MIN(T, pe, i)
#define RV_SUM(T, pe, i) ((T)((pe) + (i) % 5))
#define RV_PROD(T, pe, i) ((T)((i) % 2 == 0 ? ((pe) % 3 + 1) : ((i) % 5 == (pe) % 5 ? 2 : 1)))

#define RC_AND(a, b) ((a) & (b))
#define RC_OR(a, b) ((a) | (b))
#define RC_XOR(a, b) ((a) ^ (b))
#define RC_MIN(a, b) ((b) < (a) ? (b) : (a))
#define RC_MAX(a, b) ((b) > (a) ? (b) : (a))
#define RC_SUM(a, b) ((a) + (b))
#define RC_PROD(a, b) ((a) * (b))

/* complex values: (pe%2 ? 1 : 1+i) keeps products exact */
#define RV_CSUM(T, pe, i) ((T)((pe) + (i) % 3) + (T)((pe) - (i) % 4) * 1.0fi)
#define RV_CPROD(T, pe, i) ((pe) % 2 ? (T)1 : (T)1 + (T)1.0fi)
#endif
