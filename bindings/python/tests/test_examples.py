"""The examples run as written: the script, and the notebook via nbclient."""

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import FAMRUN, HAVE_LAUNCHER, PKG_ROOT, REPO, needs_famrun, run_python

EXAMPLES = PKG_ROOT / "examples"


def test_spmv_script(private_store):
    r = run_python((EXAMPLES / "spmv.py").read_text(), private_store, args=["--rows", "300"])
    assert r.returncode == 0, r.stderr
    assert "1 PE(s), max error" in r.stdout


@needs_famrun
def test_spmv_script_under_famrun(private_store):
    # The documented `famrun -n 4 python spmv.py`: every PE must find the
    # region PE 0 made (it used to pick a random name on each PE, so every
    # PE but 0 failed with NotFound).
    env = dict(os.environ, **private_store)
    r = subprocess.run(
        [str(FAMRUN), "-n", "4", sys.executable, str(EXAMPLES / "spmv.py"), "--rows", "300"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 PE(s), max error" in r.stdout


def _spmv_module():
    spec = importlib.util.spec_from_file_location("spmv_example", EXAMPLES / "spmv.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "env,want",
    [
        ({"FAMRUN_JOB": "0123abcd", "SLURM_JOB_ID": "77"}, "0123abcd"),
        ({"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "3"}, "77.3"),
        ({"SLURM_JOB_ID": "77"}, "77"),
        ({}, None),
    ],
)
def test_spmv_job_id_sources(monkeypatch, env, want):
    for var in ("FAMRUN_JOB", "SLURM_JOB_ID", "SLURM_STEP_ID"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _spmv_module().job_id() == want


# Executes the notebook argv[1] in a fresh kernel of exactly this interpreter
# (a kernelspec first on JUPYTER_PATH, so no user-wide or system "python3"
# kernel without openfam is picked up), in directory argv[2]; prints how many
# cells ran, how many outputs were HTML, and the streams.
RUN_NOTEBOOK = (
    "import json, os, sys, tempfile, nbformat\n"
    "spec = os.path.join(tempfile.mkdtemp(), 'kernels', 'openfam-test')\n"
    "os.makedirs(spec)\n"
    "json.dump({'argv': [sys.executable, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],\n"
    "           'display_name': 'openfam test', 'language': 'python'},\n"
    "          open(os.path.join(spec, 'kernel.json'), 'w'))\n"
    "os.environ['JUPYTER_PATH'] = os.path.dirname(os.path.dirname(spec))\n"
    "from nbclient import NotebookClient\n"
    "nb = nbformat.read(sys.argv[1], as_version=4)\n"
    "NotebookClient(nb, timeout=120, kernel_name='openfam-test',\n"
    "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
    "outs = [o for c in nb.cells if c.cell_type == 'code' for o in c.get('outputs', [])]\n"
    "assert not [o for o in outs if o.output_type == 'error']\n"
    "html = [o for o in outs if 'text/html' in o.get('data', {})]\n"
    "png = [o for o in outs if 'image/png' in o.get('data', {})]\n"
    "print('executed', len(nb.cells), 'html', len(html), 'png', len(png))\n"
    "print(''.join(o.get('text', '') for o in outs if o.output_type == 'stream'))\n"
)


def test_spmv_notebook_executes(private_store):
    r = run_python(RUN_NOTEBOOK, private_store, timeout=170, args=[str(EXAMPLES / "spmv.ipynb"), str(EXAMPLES)])
    assert r.returncode == 0, r.stderr[-3000:]
    # The Fam of the first cell and the item of the second show as tables.
    assert "html 2" in r.stdout
    assert "max error" in r.stdout
    # The PE scaling cell runs where rmatgen and famrun are built (make
    # test-python builds them): three runs and their plot.
    if (REPO / "build" / "apps" / "rmatgen").exists() and (HAVE_LAUNCHER or "FAMRUN" in os.environ):
        assert "4 PE(s):" in r.stdout, r.stdout
        assert "png 1" in r.stdout, r.stdout


def test_rerunning_the_initializing_cell(private_store, tmp_path):
    # A notebook user runs the cell that initializes, loses the variable,
    # and runs the cell again: it used to fail with "already initialized"
    # and the live instance could not be found again.
    import nbformat

    init = 'import openfam\nfam = openfam.Fam("nb").initialize()\nregion = fam.create_region(name, 1 << 16)\nfam'
    cells = [
        'import uuid\nname = "rerun-" + uuid.uuid4().hex',
        init.replace("region = fam.create_region(name, 1 << 16)", "first = fam"),
        "del fam",
        init.replace("region = fam.create_region(name, 1 << 16)", "assert fam is first and fam.active"),
        init.replace("region = fam.create_region(name, 1 << 16)", "region = fam.create_region(name, 1 << 16)"),
        "assert openfam.Fam.current() is first\nprint('current ok', openfam.Fam.current().pe_count)",
        "region.destroy()\nfam.finalize()\nprint('after finalize', openfam.Fam.current())",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    path = tmp_path / "rerun.ipynb"
    nbformat.write(nb, str(path))
    r = run_python(RUN_NOTEBOOK, private_store, timeout=170, args=[str(path), str(tmp_path)])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "current ok 1" in r.stdout and "after finalize None" in r.stdout
    assert "html 3" in r.stdout, r.stdout  # each `fam` shows as a table
