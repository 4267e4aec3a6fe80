"""The exception hierarchy (needs no library), and which class a real
failure arrives as."""

import os
import pickle
import subprocess
import sys

import pytest

import openfam
from conftest import run_python
from openfam._errors import CODES

FAMILIES = {
    "FAM_ENOTFOUND": openfam.NotFound,
    "FAM_EBACKUPNOTFOUND": openfam.NotFound,
    "FAM_ENOPERM": openfam.PermissionDenied,
    "FAM_EEXIST": openfam.AlreadyExists,
    "FAM_ERANGE": openfam.OutOfRange,
    "FAM_EINVAL": openfam.InvalidArgument,
    "FAM_ENULLPTR": openfam.InvalidArgument,
    "FAM_ENAMETOOLONG": openfam.NameTooLong,
    "FAM_ENOSPACE": openfam.NoSpace,
    "FAM_ERESOURCE": openfam.ResourceBusy,
    "FAM_ERPC": openfam.Unavailable,
    "FAM_ETIMEOUT": openfam.Timeout,
    "FAM_EUNIMPL": openfam.Unimplemented,
    "FAM_EINVALIDOP": openfam.InvalidOperation,
    "FAM_EUNKNOWN": openfam.InternalError,
    "FAM_EMETADATA": openfam.InternalError,
}


@pytest.mark.parametrize("name,cls", sorted(FAMILIES.items()))
def test_code_selects_family(name, cls):
    e = openfam.FamError(CODES[name], "msg")
    assert type(e) is cls
    assert isinstance(e, openfam.FamError)
    assert e.code == CODES[name]
    assert e.name == name
    assert str(e) == "msg [%s]" % name


def test_every_code_has_a_family():
    for name, code in CODES.items():
        assert type(openfam.FamError(code, "")) is not openfam.FamError, name


def test_unknown_code_stays_base():
    e = openfam.FamError(999, "future")
    assert type(e) is openfam.FamError and e.name == "FAM_E999"


def test_python_builtin_bases():
    assert issubclass(openfam.InvalidArgument, ValueError)
    assert issubclass(openfam.NameTooLong, openfam.InvalidArgument)
    assert issubclass(openfam.NotFound, LookupError)
    assert issubclass(openfam.OutOfRange, IndexError)
    assert issubclass(openfam.Timeout, openfam.Unavailable)
    assert issubclass(openfam.ForkedChildError, openfam.InvalidOperation)


def test_pickle_round_trip():
    e = openfam.FamError(CODES["FAM_EEXIST"], "dup")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is openfam.AlreadyExists and back.code == e.code and back.message == "dup"


def test_subclass_constructed_directly_keeps_class():
    e = openfam.NotFound(8, "x")
    assert type(e) is openfam.NotFound and e.code == 8


def test_store_held_by_another_process_is_resource_busy(private_store):
    # The embedded store serves one process at a time; the second one's
    # error used to arrive as NoSpace. The waiting is bounded by the
    # library (about 2 s), not by this test.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import openfam, sys; f = openfam.Fam(); f.initialize(); print('held', flush=True); sys.stdin.read()"],
        env={**os.environ, **private_store}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        r = run_python(
            "import openfam\ntry:\n    openfam.Fam().initialize()\nexcept openfam.ResourceBusy as e:\n    print('busy', e.code)\n",
            private_store,
        )
        assert r.stdout.strip() == "busy 17", (r.stdout, r.stderr)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
