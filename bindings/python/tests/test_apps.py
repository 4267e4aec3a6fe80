"""The C applications (bindings/c/apps: spmv, pagerank, rmatgen) against
serial references written here in numpy, independent of the C code: the
same inputs (an R-MAT FAMCSR file, a Matrix Market file, an edge list) run
under famrun with 2 and 3 PEs and with two memory servers, and their
--output must match. The Python spmv example must read the same FAMCSR
file and give the same y."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FAMRUN, PKG_ROOT, REPO, needs_famrun

APPS = REPO / "build" / "apps"
DATA = REPO / "bindings" / "c" / "apps" / "testdata"
EXAMPLES = PKG_ROOT / "examples"

# `make test-python` builds the apps first; a bare pytest run without them skips.
needs_apps = pytest.mark.skipif(
    not (APPS / "spmv").exists() and "FAMRUN" not in os.environ,
    reason="the C apps are not built (make apps)",
)

sys.path.insert(0, str(EXAMPLES))
import spmv as spmv_example  # noqa: E402


def famrun(args, env_store, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENFAM_SERVER", "OPENFAM_TOKEN_FILE", "FAMRUN_JOB")}
    env.update(env_store)
    r = subprocess.run([str(FAMRUN), "--timeout", "240s", *args], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def read_vector(path):
    return np.array([float(v) for v in Path(path).read_text().split()])


def parse_graph(path):
    """(n, unique edges u -> v) of an edge list or Matrix Market file,
    parsed here, not by the C reader."""
    lines = [ln for ln in Path(path).read_text().splitlines()]
    edges = set()
    if lines[0].startswith("%%MatrixMarket"):
        sym = "symmetric" in lines[0].lower()
        body = [ln for ln in lines[1:] if ln.strip() and not ln.startswith("%")]
        nr, nc, _ = (int(v) for v in body[0].split())
        for ln in body[1:]:
            r, c = (int(v) - 1 for v in ln.split()[:2])
            edges.add((r, c))
            if sym:
                edges.add((c, r))
        return max(nr, nc), sorted(edges)
    for ln in lines:
        if ln.strip() and not ln.lstrip().startswith(("#", "%")):
            u, v = (int(t) for t in ln.split()[:2])
            edges.add((u, v))
    return max(max(e) for e in edges) + 1, sorted(edges)


def numpy_pagerank(n, edges, d=0.85, tol=1e-8, max_iters=200):
    src = np.array([e[0] for e in edges])
    dst = np.array([e[1] for e in edges])
    outdeg = np.bincount(src, minlength=n).astype(float)
    r = np.full(n, 1.0 / n)
    for _ in range(max_iters):
        contrib = np.where(outdeg > 0, r / np.where(outdeg > 0, outdeg, 1), 0.0)
        new = np.full(n, (1 - d) / n + d * r[outdeg == 0].sum() / n)
        np.add.at(new, dst, d * contrib[src])
        change = np.abs(new - r).sum()
        r = new
        if change < tol:
            break
    return r


@pytest.fixture(scope="module")
def rmat_file(tmp_path_factory):
    if not (APPS / "rmatgen").exists():
        pytest.skip("rmatgen is not built (make apps)")
    path = tmp_path_factory.mktemp("rmat") / "rmat.famcsr"
    subprocess.run([str(APPS / "rmatgen"), "--scale", "9", "--edge-factor", "8", "--seed", "5", "-o", str(path)],
                   check=True, capture_output=True)
    return path


@needs_famrun
@needs_apps
@pytest.mark.parametrize("launch", [["-n", "2"], ["-n", "3", "--servers", "2"]])
def test_c_spmv_matches_numpy(rmat_file, private_store, tmp_path, launch):
    out = tmp_path / "y.txt"
    famrun([*launch, str(APPS / "spmv"), "--input", str(rmat_file), "--group", "7", "--output", str(out)],
           private_store)
    indptr, indices, data, ncols = spmv_example.read_famcsr(str(rmat_file))
    want = spmv_example.csr_matvec(indptr, indices, data, spmv_example.fixed_x(ncols))
    np.testing.assert_allclose(read_vector(out), want, rtol=1e-12, atol=0)


@needs_famrun
@needs_apps
@pytest.mark.parametrize("name,launch", [("graph.edges", ["-n", "3"]), ("small.mtx", ["-n", "2", "--servers", "2"])])
def test_c_pagerank_matches_numpy(name, launch, private_store, tmp_path):
    out = tmp_path / "rank.txt"
    famrun([*launch, str(APPS / "pagerank"), "--input", str(DATA / name), "--group", "2", "--output", str(out)],
           private_store)
    n, edges = parse_graph(DATA / name)
    got = read_vector(out)
    assert len(got) == n
    np.testing.assert_allclose(got, numpy_pagerank(n, edges), rtol=0, atol=1e-8)
    assert abs(got.sum() - 1) < 1e-9


@needs_famrun
@needs_apps
def test_c_pagerank_rmat_matches_numpy(rmat_file, private_store, tmp_path):
    out = tmp_path / "rank.txt"
    famrun(["-n", "2", str(APPS / "pagerank"), "--input", str(rmat_file), "--interleave", "off", "--output",
            str(out)], private_store)
    indptr, indices, _, ncols = spmv_example.read_famcsr(str(rmat_file))
    n = max(len(indptr) - 1, ncols)
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    np.testing.assert_allclose(read_vector(out), numpy_pagerank(n, list(zip(rows, indices))), rtol=0, atol=1e-8)


@needs_famrun
@needs_apps
def test_python_spmv_reads_the_c_input(rmat_file, private_store, tmp_path):
    c_out, py_out = tmp_path / "c.txt", tmp_path / "py.txt"
    famrun(["-n", "2", str(APPS / "spmv"), "--input", str(rmat_file), "--output", str(c_out)], private_store)
    famrun(["-n", "3", sys.executable, str(EXAMPLES / "spmv.py"), "--input", str(rmat_file), "--output",
            str(py_out)], private_store)
    np.testing.assert_allclose(read_vector(py_out), read_vector(c_out), rtol=1e-12, atol=0)


@needs_famrun
@needs_apps
def test_spmv_scaling_plot(rmat_file, private_store, tmp_path, monkeypatch):
    for k, v in private_store.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("FAMRUN", str(FAMRUN))
    results = spmv_example.scaling(str(rmat_file), [1, 2], repeat=1)
    assert [r["pes"] for r in results] == [1, 2]
    assert all(r["time_ms"] > 0 and r["max_error"] < 1e-9 for r in results)
    svg = tmp_path / "scaling.svg"
    spmv_example.plot_scaling(results, str(svg))
    assert svg.read_text().lstrip().startswith("<?xml")


def test_read_famcsr_refuses_damaged_files(tmp_path):
    good = tmp_path / "good.famcsr"
    # 2 x 3, entries (0, 2) = 1.5 and (1, 0) = -2
    good.write_bytes(b"FAMCSR1\0" + np.array([2, 3, 2], "<u8").tobytes() + np.array([0, 1, 2], "<i8").tobytes()
                     + np.array([2, 0], "<i8").tobytes() + np.array([1.5, -2.0], "<f8").tobytes())
    indptr, indices, data, ncols = spmv_example.read_famcsr(str(good))
    assert ncols == 3 and list(indices) == [2, 0]
    np.testing.assert_array_equal(spmv_example.csr_matvec(indptr, indices, data, np.array([1.0, 2, 4])), [6, -2])
    raw = good.read_bytes()
    for bad, why in ((raw[:-8], "length"), (b"XXXXXXXX" + raw[8:], "not a FAMCSR"),
                     (raw[:56] + np.array([5], "<i8").tobytes() + raw[64:], "column")):
        (tmp_path / "bad").write_bytes(bad)
        with pytest.raises(ValueError, match=why):
            spmv_example.read_famcsr(str(tmp_path / "bad"))
