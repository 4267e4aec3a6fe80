"""Sparse matrix-vector product with the matrix and vectors in FAM.

PE 0 stores a random CSR matrix A (indptr, indices, data) and a vector x in
FAM. Every PE reads all of x (each row may touch any column), computes y for
its own block of rows straight from FAM, and writes that block of y back.
PE 0 then checks y against numpy. Runs alone or under a launcher:

    python spmv.py              # one PE
    famrun -n 4 python spmv.py  # four PEs share the work

Every PE must name the same region, so the name comes from the job's id,
which the launcher gives each of its processes alike (see job_id).
"""

import argparse
import os
import sys
import uuid
from typing import Optional

import numpy as np

import openfam


def job_id() -> Optional[str]:
    """The launcher's id of this job, the same in every PE, or None.

    famrun sets FAMRUN_JOB; under SLURM the job and step ids together tell
    apart two runs in one allocation.
    """
    if os.environ.get("FAMRUN_JOB"):
        return os.environ["FAMRUN_JOB"]
    if os.environ.get("SLURM_JOB_ID"):
        step = os.environ.get("SLURM_STEP_ID")
        return os.environ["SLURM_JOB_ID"] + ("." + step if step else "")
    return None


def region_name(fam: openfam.Fam) -> str:
    """A region name shared by the job's PEs and unique to this run."""
    job = job_id()
    if job is not None:
        return "spmv-" + job
    if fam.pe_count > 1:
        # A random name would differ on every PE; say what to do instead.
        sys.exit("spmv: %d PEs but no job id (FAMRUN_JOB, SLURM_JOB_ID) to name "
                 "the shared region; pass the same --region NAME to every PE" % fam.pe_count)
    return "spmv-" + uuid.uuid4().hex[:16]


def store_csr(region: openfam.Region, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> None:
    for name, arr in (("indptr", indptr), ("indices", indices), ("data", data)):
        region.allocate(arr.nbytes, name).put(arr)


def my_rows(n_rows: int, pe: int, pes: int) -> range:
    per = -(-n_rows // pes)
    return range(min(pe * per, n_rows), min((pe + 1) * per, n_rows))


def spmv_block(fam: openfam.Fam, region_name: str, rows: range, x: np.ndarray) -> np.ndarray:
    """y[rows] = A[rows] @ x, reading just those rows of A from FAM."""
    indptr = fam.lookup("indptr", region_name)
    lo_hi = indptr.gather(range(rows.start, rows.stop + 1), np.int64)
    lo, hi = int(lo_hi[0]), int(lo_hi[-1])
    cols = np.empty(hi - lo, dtype=np.int64)
    vals = np.empty(hi - lo, dtype=np.float64)
    fam.lookup("indices", region_name).get_into(cols, lo * 8, blocking=False)
    fam.lookup("data", region_name).get_into(vals, lo * 8, blocking=False)
    fam.quiet()  # both reads are in flight together
    y = np.zeros(len(rows))
    np.add.at(y, np.repeat(np.arange(len(rows)), np.diff(lo_hi)), vals * x[cols])
    return y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--region", help="region name (default: from the job id, see job_id)")
    args = ap.parse_args()

    with openfam.Fam("spmv") as fam:
        if args.region is None:
            args.region = region_name(fam)
        n = args.rows
        rng = np.random.default_rng(42)
        dense = np.where(rng.random((n, n)) < args.density, rng.standard_normal((n, n)), 0.0)
        x_local = rng.standard_normal(n)
        if fam.pe_id == 0:
            rows_nz, cols_nz = np.nonzero(dense)
            indptr = np.concatenate(([0], np.cumsum(np.bincount(rows_nz, minlength=n)))).astype(np.int64)
            region = fam.create_region(args.region, 64 << 20)
            store_csr(region, indptr, cols_nz.astype(np.int64), dense[rows_nz, cols_nz])
            region.allocate(8 * n, "x").put(x_local)
            region.allocate(8 * n, "y")
        fam.barrier()

        x = fam.lookup("x", args.region).get_into(np.empty(n))  # every PE reads all of x
        rows = my_rows(n, fam.pe_id, fam.pe_count)
        y_block = spmv_block(fam, args.region, rows, x)
        fam.lookup("y", args.region).put(y_block, rows.start * 8)
        fam.barrier()

        if fam.pe_id == 0:
            y = fam.lookup("y", args.region).get_into(np.empty(n))
            err = float(np.max(np.abs(y - dense @ x_local)))
            print("spmv: %d x %d, %d nonzeros, %d PE(s), max error %.3g"
                  % (n, n, int(np.count_nonzero(dense)), fam.pe_count, err))
            assert err < 1e-9
            fam.lookup_region(args.region).destroy()


if __name__ == "__main__":
    main()
