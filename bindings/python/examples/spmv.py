"""Sparse matrix-vector product with the matrix and vectors in FAM.

PE 0 stores a CSR matrix A (indptr, indices, data) and a vector x in FAM:
a random one, or one read from a FAMCSR file (--input), the format that
rmatgen writes and the C applications (bindings/c/apps: spmv, pagerank)
read, so both languages can run the same generated input. Every PE reads
all of x (each row may touch any column), computes y for its own block of
rows straight from FAM, and writes that block of y back. PE 0 then checks y
against numpy. Runs alone or under a launcher:

    python spmv.py                                  # one PE
    famrun -n 4 python spmv.py                      # four PEs share the work
    rmatgen --scale 12 --edge-factor 16 -o a.famcsr
    famrun -n 4 python spmv.py --input a.famcsr     # the C apps' input
    python spmv.py --input a.famcsr --scaling 1,2,4 --plot scaling.svg

With --scaling, the script runs itself under famrun once per PE count and
plots the time of the product against the number of PEs.

Every PE must name the same region, so the name comes from the job's id,
which the launcher gives each of its processes alike (see job_id).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

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


FAMCSR_MAGIC = b"FAMCSR1\0"


def read_famcsr(path: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Reads a FAMCSR file: (indptr, indices, data, ncols).

    Layout (little-endian): 8 bytes magic "FAMCSR1\\0", uint64 nrows, ncols,
    nnz, then int64 indptr[nrows + 1], int64 indices[nnz], float64
    values[nnz]. Sizes are checked against the file's length and the
    indices against the shape, so a damaged file is refused with a reason.
    """
    raw = Path(path).read_bytes()
    if raw[:8] != FAMCSR_MAGIC:
        raise ValueError("%s: not a FAMCSR file (convert others with rmatgen --convert)" % path)
    nrows, ncols, nnz = (int(v) for v in np.frombuffer(raw, "<u8", 3, 8))
    if len(raw) != 32 + 8 * (nrows + 1) + 16 * nnz:
        raise ValueError("%s: FAMCSR sizes do not match the file's length" % path)
    off = 32
    indptr = np.frombuffer(raw, "<i8", nrows + 1, off).astype(np.int64)
    off += 8 * (nrows + 1)
    indices = np.frombuffer(raw, "<i8", nnz, off).astype(np.int64)
    data = np.frombuffer(raw, "<f8", nnz, off + 8 * nnz).astype(np.float64)
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise ValueError("%s: FAMCSR indptr is not a valid row index" % path)
    if nnz and (indices.min() < 0 or indices.max() >= ncols):
        raise ValueError("%s: FAMCSR column index out of range" % path)
    return indptr, indices, data, ncols


def fixed_x(ncols: int) -> np.ndarray:
    """The vector the C spmv multiplies by: x[j] = 1 + (j % 17) / 16."""
    return 1.0 + (np.arange(ncols) % 17) / 16.0


def csr_matvec(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, x: np.ndarray) -> np.ndarray:
    """y = A @ x for a CSR matrix, in numpy alone (the serial reference)."""
    y = np.zeros(len(indptr) - 1)
    np.add.at(y, np.repeat(np.arange(len(indptr) - 1), np.diff(indptr)), data * x[indices])
    return y


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
    if hi > lo:  # a block of empty rows (common in R-MAT inputs) reads nothing
        fam.lookup("indices", region_name).get_into(cols, lo * 8, blocking=False)
        fam.lookup("data", region_name).get_into(vals, lo * 8, blocking=False)
        fam.quiet()  # both reads are in flight together
    y = np.zeros(len(rows))
    np.add.at(y, np.repeat(np.arange(len(rows)), np.diff(lo_hi)), vals * x[cols])
    return y


def find_famrun() -> str:
    """famrun from $FAMRUN, PATH, or this source tree's build/bin."""
    for cand in (os.environ.get("FAMRUN"), shutil.which("famrun"),
                 str(Path(__file__).resolve().parents[3] / "build" / "bin" / "famrun")):
        if cand and os.path.exists(cand):
            return cand
    raise FileNotFoundError("famrun not found: set FAMRUN, put it on PATH or `make famrun`")


def scaling(input_path: str, pes: Sequence[int], repeat: int = 3, famrun: Optional[str] = None) -> List[Dict]:
    """Runs this script under `famrun -n P` for each P in pes on one FAMCSR
    input and returns PE 0's --json result of each (time_ms is the best of
    repeat products, each timed between two barriers)."""
    famrun = famrun or find_famrun()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENFAM_SERVER", "FAMRUN_JOB")}
    out = []
    for p in pes:
        cmd = [famrun, "-n", str(p), "--timeout", "300s", sys.executable, os.path.abspath(__file__),
               "--input", input_path, "--json", "--repeat", str(repeat)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=360)
        if r.returncode != 0:
            raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
        out.append(json.loads([line for line in r.stdout.splitlines() if line.startswith("{")][-1]))
    return out


def plot_scaling(results: List[Dict], path: Optional[str] = None):  # type: ignore[no-untyped-def]
    """A bar chart of the product's time against PEs; saved to path if given.
    Returns the matplotlib figure."""
    import matplotlib

    if path is not None and "ipykernel" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    pes = [str(r["pes"]) for r in results]
    ax.bar(pes, [r["time_ms"] for r in results], color="tab:blue")
    ax.set_xlabel("PEs (famrun -n)")
    ax.set_ylabel("ms per product (best of %d)" % results[0]["repeat"])
    ax.set_title("SpMV in FAM: %d x %d, %d nonzeros" % (results[0]["rows"], results[0]["cols"], results[0]["nnz"]))
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--input", help="a FAMCSR file (rmatgen) instead of a random matrix; x[j] = 1 + (j %% 17) / 16")
    ap.add_argument("--region", help="region name (default: from the job id, see job_id)")
    ap.add_argument("--output", help="PE 0 writes y here, one value per line (as the C spmv --output)")
    ap.add_argument("--repeat", type=int, default=1, help="products to time (the best is reported)")
    ap.add_argument("--json", action="store_true", help="PE 0 prints its figures as one JSON object")
    ap.add_argument("--scaling", help="comma-separated PE counts: run under famrun for each (needs --input)")
    ap.add_argument("--plot", help="with --scaling: save the plot here (SVG or PNG by the suffix)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    if args.scaling:
        if not args.input:
            ap.error("--scaling needs --input (every run must read the same matrix)")
        results = scaling(args.input, [int(p) for p in args.scaling.split(",")], args.repeat)
        for r in results:
            print("spmv: %d PE(s): %.3f ms per product" % (r["pes"], r["time_ms"]))
        if args.plot:
            plot_scaling(results, args.plot)
            print("spmv: plot written to %s" % args.plot)
        return

    if args.input:
        indptr, indices, data, n_cols = read_famcsr(args.input)
        x_local = fixed_x(n_cols)
        n = len(indptr) - 1
    else:
        n = n_cols = args.rows
        rng = np.random.default_rng(42)
        dense = np.where(rng.random((n, n)) < args.density, rng.standard_normal((n, n)), 0.0)
        x_local = rng.standard_normal(n)
        rows_nz, cols_nz = np.nonzero(dense)
        indptr = np.concatenate(([0], np.cumsum(np.bincount(rows_nz, minlength=n)))).astype(np.int64)
        indices, data = cols_nz.astype(np.int64), dense[rows_nz, cols_nz]

    with openfam.Fam("spmv") as fam:
        if args.region is None:
            args.region = region_name(fam)
        if fam.pe_id == 0:
            need = 8 * (len(indptr) + 2 * len(indices) + n_cols + n) + (8 << 20)
            region = fam.create_region(args.region, need)
            store_csr(region, indptr, indices, data)
            region.allocate(8 * max(n_cols, 1), "x").put(x_local)
            region.allocate(8 * max(n, 1), "y")
        fam.barrier()

        best = float("inf")
        rows = my_rows(n, fam.pe_id, fam.pe_count)
        for _ in range(args.repeat):
            fam.barrier()
            t0 = time.perf_counter()
            x = fam.lookup("x", args.region).get_into(np.empty(n_cols))  # every PE reads all of x
            y_block = spmv_block(fam, args.region, rows, x)
            if len(rows):
                fam.lookup("y", args.region).put(y_block, rows.start * 8)
            fam.barrier()
            best = min(best, (time.perf_counter() - t0) * 1e3)

        if fam.pe_id == 0:
            y = fam.lookup("y", args.region).get_into(np.empty(n))
            err = float(np.max(np.abs(y - csr_matvec(indptr, indices, data, x_local)), initial=0.0))
            if args.output:
                Path(args.output).write_text("".join("%.17g\n" % v for v in y))
            if args.json:
                print(json.dumps({"pes": fam.pe_count, "rows": n, "cols": n_cols, "nnz": len(indices),
                                  "repeat": args.repeat, "time_ms": best, "max_error": err}))
            else:
                print("spmv: %d x %d, %d nonzeros, %d PE(s), max error %.3g, %.3f ms per product"
                      % (n, n_cols, len(indices), fam.pe_count, err, best))
            assert err < 1e-9
            fam.lookup_region(args.region).destroy()


if __name__ == "__main__":
    main()
