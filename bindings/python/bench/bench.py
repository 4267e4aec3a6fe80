"""Overhead of the Python binding, printed beside baselines from the same run.

Figures (min over repeats, one machine, one run):
  1. 8-byte get_into a numpy array, per call, against a ctypes call of an
     empty C function with the same signature (and of one with none).
     Target: ratio <= 2.
  2. 4 MiB get_into a numpy array, bandwidth, against the same call made
     from C (a small C program built here against libopenfam) and against a
     plain numpy copy out of the mapped item (memcpy). Target: >= 80% of C.
Runs on a private temporary store. Needs a C compiler for the baselines.
Usage: python bench.py [--quick]
"""

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import timeit
import uuid
from pathlib import Path

import numpy as np

import openfam
from openfam import _capi

REPO = Path(__file__).resolve().parents[3]
BIG = 4 << 20

EMPTY_C = r"""
#include <stdint.h>
int empty4(void *local, void *d, uint64_t offset, uint64_t nbytes) {
    (void)local; (void)d; (void)offset; (void)nbytes; return 0; }
void empty0(void) {}
"""

C_BENCH = r"""
#include <openfam.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    int iters = atoi(argv[2]), small_iters = atoi(argv[3]);
    if (fam_initialize("bench", NULL)) { fprintf(stderr, "init: %s\n", fam_errmsg()); return 1; }
    fam_region_t *r = fam_create_region(argv[1], 64u << 20, 0600, NULL);
    fam_desc_t *d = r ? fam_allocate("big", 4u << 20, 0600, r) : NULL;
    if (!d) { fprintf(stderr, "alloc: %s\n", fam_errmsg()); return 1; }
    char *buf = calloc(1, 4u << 20);
    fam_put_blocking(buf, d, 0, 4u << 20);
    double best = 1e9, best_small = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) if (fam_get_blocking(buf, d, 0, 4u << 20)) return 2;
        double t = (now() - t0) / iters; if (t < best) best = t;
        t0 = now();
        for (int i = 0; i < small_iters; i++) if (fam_get_blocking(buf, d, 0, 8)) return 2;
        t = (now() - t0) / small_iters; if (t < best_small) best_small = t;
    }
    printf("%.9f %.9f\n", best, best_small);
    fam_destroy_region(r);
    fam_finalize("bench");
    return 0;
}
"""


def best(stmt: str, glb: dict, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, globals=glb, number=number, repeat=repeat)) / number


def build(tmp: Path, name: str, src: str, args: list) -> Path:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler")
    (tmp / (name + ".c")).write_text(src)
    out = tmp / name
    subprocess.run([cc, "-O2", str(tmp / (name + ".c")), "-o", str(out)] + args, check=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    opt = ap.parse_args()
    small_n = 20000 if opt.quick else 200000
    big_n = 20 if opt.quick else 100

    tmp = Path(tempfile.mkdtemp(prefix="openfam-bench-"))
    for var in ("OPENFAM_DATA_DIR", "OPENFAM_SHM_DIR", "OPENFAM_BACKUP_DIR"):
        os.environ[var] = str(tmp / var.lower())
        os.makedirs(os.environ[var])
    try:
        libpath = openfam.library_path()
        empty = ctypes.CDLL(str(build(tmp, "empty.so", EMPTY_C, ["-shared", "-fPIC"])))
        empty.empty4.argtypes = L4 = _capi.L.get_blocking.argtypes
        empty.empty4.restype = ctypes.c_int
        empty.empty0.argtypes = []
        empty.empty0.restype = None

        c_big = c_small = None
        try:
            exe = build(tmp, "cbench", C_BENCH, ["-I", str(REPO / "include"), libpath,
                                                 "-Wl,-rpath," + str(Path(libpath).parent)])
            r = subprocess.run([str(exe), "cb" + uuid.uuid4().hex[:8], str(big_n), str(small_n)],
                               capture_output=True, text=True, timeout=300, check=True)
            c_big, c_small = (float(x) for x in r.stdout.split())
        except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
            print("C baseline unavailable: %s" % e, file=sys.stderr)

        with openfam.Fam("bench") as fam:
            region = fam.create_region("pb" + uuid.uuid4().hex[:8], 64 << 20)
            item = region.allocate(BIG, "big")
            item.put(np.zeros(BIG, dtype=np.uint8))
            small = np.empty(1, dtype=np.uint64)
            dst = np.empty(BIG, dtype=np.uint8)
            addr = small.__array_interface__["data"][0]
            g = {"get_into": item.get_into, "small": small, "dst": dst, "e4": empty.empty4,
                 "e0": empty.empty0, "addr": addr, "h": item._h, "np": np}

            t_get = best("get_into(small)", g, small_n)
            t_e4 = best("e4(addr, h, 0, 8)", g, small_n)
            t_e0 = best("e0()", g, small_n)
            print("8-byte get_into numpy          %8.1f ns/call" % (t_get * 1e9))
            print("ctypes empty C fn, same args   %8.1f ns/call   ratio %.2f (target <= 2)" % (t_e4 * 1e9, t_get / t_e4))
            print("ctypes empty C fn, no args     %8.1f ns/call   ratio %.2f" % (t_e0 * 1e9, t_get / t_e0))
            if c_small is not None:
                print("8-byte fam_get_blocking from C %8.1f ns/call" % (c_small * 1e9))

            t_big = best("get_into(dst)", g, big_n, repeat=5)
            gbs = BIG / t_big / 1e9
            print("4 MiB get_into numpy           %8.2f GB/s" % gbs)
            if c_big is not None:
                print("4 MiB fam_get_blocking from C  %8.2f GB/s   python/C %.0f%% (target >= 80%%)"
                      % (BIG / c_big / 1e9, 100 * c_big / t_big))
            try:
                g["src"] = item.as_array(np.uint8)
                t_cp = best("np.copyto(dst, src)", g, big_n, repeat=5)
                print("4 MiB numpy copy from map      %8.2f GB/s   python/memcpy %.0f%%" % (BIG / t_cp / 1e9, 100 * t_cp / t_big))
                del g["src"]
                item.unmap()
            except openfam.Unimplemented:
                print("item not mappable here; no memcpy baseline")
            region.destroy()
        print("library: %s; argtypes %s" % (libpath, [t.__name__ for t in L4]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
