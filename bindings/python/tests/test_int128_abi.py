"""The by-value __int128 declarations, checked against the C compiler.

ctypes has no 128-bit type, so _capi passes each __int128 as two 64-bit
halves placed where the x86-64 System V ABI puts them. A tiny C library with
the same signatures as openfam.h records what it receives.
"""

import ctypes
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from openfam import _capi

SRC = r"""
#include <stdint.h>
typedef __int128 i128;
i128 got_v, got_e, got_d; void *got_c, *got_dsc; uint64_t got_off;
int fam_set_int128(void *d, uint64_t off, i128 v) { got_dsc = d; got_off = off; got_v = v; return 0; }
int fam_ctx_set_int128(void *c, void *d, uint64_t off, i128 v) { got_c = c; got_dsc = d; got_off = off; got_v = v; return 0; }
int fam_compare_swap_int128(void *d, uint64_t off, i128 e, i128 n, i128 *out) {
    got_dsc = d; got_off = off; got_e = e; got_d = n; *out = e + n; return 0; }
int fam_ctx_compare_swap_int128(void *c, void *d, uint64_t off, i128 e, i128 n, i128 *out) {
    got_c = c; got_dsc = d; got_off = off; got_e = e; got_d = n; *out = e - n; return 0; }
"""

pytestmark = [
    pytest.mark.skipif(not _capi.INT128_SUPPORTED, reason="by-value int128 is x86-64 only"),
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler"),
]


@pytest.fixture(scope="module")
def abi(tmp_path_factory):
    d = tmp_path_factory.mktemp("abi")
    (d / "abi.c").write_text(SRC)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(d / "abi.so"), str(d / "abi.c")], check=True)
    lib = ctypes.CDLL(str(d / "abi.so"))
    ns = SimpleNamespace()
    _capi._declare_int128(lib, into=ns)
    return lib, ns


def i128(lib, name):
    raw = (ctypes.c_uint64 * 2).in_dll(lib, name)
    return _capi_join(raw[0], raw[1])


def _capi_join(lo, hi):
    u = (hi << 64) | lo
    return u - (1 << 128) if u >> 127 else u


def halves(v):
    u = v & ((1 << 128) - 1)
    return u & (2**64 - 1), u >> 64


def ptr(lib, name):
    return ctypes.c_void_p.in_dll(lib, name).value


E, D = -(1 << 100) + 7, (1 << 126) + 99


def test_set(abi):
    lib, ns = abi
    assert ns.set_int128(0x1000, 48, *halves(E)) == 0
    assert i128(lib, "got_v") == E and ptr(lib, "got_dsc") == 0x1000
    assert ctypes.c_uint64.in_dll(lib, "got_off").value == 48
    assert ns.ctx_set_int128(0x2000, 0x3000, 16, *halves(D)) == 0
    assert i128(lib, "got_v") == D
    assert ptr(lib, "got_c") == 0x2000 and ptr(lib, "got_dsc") == 0x3000


def test_compare_swap(abi):
    lib, ns = abi
    out = (ctypes.c_uint64 * 2)()
    assert ns.compare_swap_int128(0x1000, 32, *halves(E), *halves(D), ctypes.byref(out)) == 0
    assert i128(lib, "got_e") == E and i128(lib, "got_d") == D
    assert _capi_join(out[0], out[1]) == E + D


def test_ctx_compare_swap_register_order(abi):
    lib, ns = abi
    out = (ctypes.c_uint64 * 2)()
    assert ns.ctx_compare_swap_int128(0x2000, 0x3000, 64, *halves(E), ctypes.byref(out), *halves(D)) == 0
    assert ptr(lib, "got_c") == 0x2000 and ptr(lib, "got_dsc") == 0x3000
    assert ctypes.c_uint64.in_dll(lib, "got_off").value == 64
    assert i128(lib, "got_e") == E and i128(lib, "got_d") == D
    assert _capi_join(out[0], out[1]) == E - D
