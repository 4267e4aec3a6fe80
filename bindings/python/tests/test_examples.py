"""The examples run as written: the script, and the notebook via nbclient."""

from conftest import PKG_ROOT, run_python

EXAMPLES = PKG_ROOT / "examples"


def test_spmv_script(private_store):
    r = run_python((EXAMPLES / "spmv.py").read_text(), private_store, args=["--rows", "300"])
    assert r.returncode == 0, r.stderr
    assert "1 PE(s), max error" in r.stdout


def test_spmv_notebook_executes(private_store):
    # A kernelspec for exactly this interpreter, first on JUPYTER_PATH, so no
    # user-wide or system "python3" kernel (without openfam) is picked up.
    code = (
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
        "print('executed', len(nb.cells), 'html', len(html))\n"
        "print(''.join(o.get('text', '') for o in outs if o.output_type == 'stream'))\n"
    )
    r = run_python(code, private_store, timeout=170, args=[str(EXAMPLES / "spmv.ipynb"), str(EXAMPLES)])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "html 1" in r.stdout or "html 2" in r.stdout
    assert "max error" in r.stdout
