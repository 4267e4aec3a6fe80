"""Finding libopenfam.so.0: package data, OPENFAM_LIBRARY, clear errors."""

import os

import openfam

from conftest import run_python


def test_import_without_library_then_clear_error(private_store):
    code = (
        "import openfam\n"
        "try:\n"
        "    openfam.Fam().__enter__()\n"
        "except openfam.LibraryNotFoundError as e:\n"
        "    print('ERR', e)\n"
    )
    store = dict(private_store, OPENFAM_LIBRARY="/nonexistent/libopenfam.so.0")
    r = run_python(code, store)
    assert r.returncode == 0, r.stderr
    assert "ERR cannot load libopenfam.so.0" in r.stdout
    assert "/nonexistent/libopenfam.so.0 (no such file)" in r.stdout
    assert "OPENFAM_LIBRARY" in r.stdout


def test_openfam_library_variable_is_used(private_store):
    path = openfam.library_path()
    assert os.path.exists(path)
    code = "import openfam\nwith openfam.Fam() as f:\n    print(openfam.library_path())\n"
    r = run_python(code, dict(private_store, OPENFAM_LIBRARY=path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == path


def test_library_path_names_the_soname():
    assert openfam.library_path().endswith("libopenfam.so.0")
