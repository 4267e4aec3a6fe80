"""Private: versions and where the library keeps things, for people to read.

Used by ``python -m openfam``, ``Fam``'s reprs and :func:`openfam.about`.
The directory defaults mirror the library's own (core/options.go): each
variable when set, else the per-user default. This module imports nothing
heavy, so that setuptools can read :data:`VERSION` without importing numpy.
"""

from __future__ import annotations

import os
from typing import Dict, List, Tuple

#: The package version (pyproject.toml reads it from here).
VERSION = "0.1.0"
#: The OpenFAM API version the C library implements.
API_VERSION = "3.2.0"


def _dir(var: str, default: str) -> Tuple[str, str]:
    v = os.environ.get(var)
    return (v, var) if v else (default, "default")


def store_settings() -> List[Tuple[str, str, str]]:
    """(what, value, where it comes from) for the server and the store.

    With ``OPENFAM_SERVER`` set, regions live at that famd and the
    directories below it are not used by this process.
    """
    server = os.environ.get("OPENFAM_SERVER")
    rows = [("server", server, "OPENFAM_SERVER") if server else ("server", "embedded", "no OPENFAM_SERVER")]
    xdg = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    data, src = _dir("OPENFAM_DATA_DIR", os.path.join(xdg, "openfam"))
    shm_root = "/dev/shm" if os.path.isdir("/dev/shm") else (os.environ.get("TMPDIR") or "/tmp")
    shm, shm_src = _dir("OPENFAM_SHM_DIR", os.path.join(shm_root, "openfam-%d" % os.getuid()))
    backup, b_src = _dir("OPENFAM_BACKUP_DIR", os.path.join(data, "backups"))
    note = " (unused: regions live at the server)" if server else ""
    rows += [
        ("data directory", data + note, src),
        ("volatile directory", shm + note, shm_src),
        ("backup directory", backup + note, b_src),
        persistence(),
    ]
    return rows


def persistence() -> Tuple[str, str, str]:
    """(what, value, source) of the persistence policy (``OPENFAM_PERSIST``).

    When writes to persistent regions reach stable storage: ``quiet``
    (default: when quiet() or persist() returns), ``each`` (every blocking
    call) or ``lazy`` (a background flush every ``OPENFAM_PERSIST_INTERVAL``,
    default 5s). Mirrors core/persist.go.
    """
    raw = os.environ.get("OPENFAM_PERSIST")
    p = (raw or "").strip().lower() or "quiet"
    src = "OPENFAM_PERSIST" if raw else "default"
    if p not in ("quiet", "each", "lazy"):
        return ("persistence", "INVALID %r (want quiet, each or lazy)" % raw, src)
    if p == "lazy":
        iv = os.environ.get("OPENFAM_PERSIST_INTERVAL") or "5s"
        return ("persistence", "lazy, flushed every %s" % iv, src)
    return ("persistence", p, src)


def job() -> Tuple[str, str]:
    """(job id, variable) of the launcher that started this process, or ("", "")."""
    for var in ("FAMRUN_JOB", "SLURM_JOB_ID"):
        if os.environ.get(var):
            return os.environ[var], var
    return "", ""


def report() -> Dict[str, str]:
    """Everything ``python -m openfam`` prints, by label, in order."""
    from . import _capi  # deferred: _capi is only needed here, not by setuptools

    out: Dict[str, str] = {"openfam (Python)": VERSION, "OpenFAM API": API_VERSION}
    try:
        _capi.load()
        out["library"] = _capi.loaded_path() or "?"
    except Exception as e:  # LibraryNotFoundError, ForkedChildError
        out["library"] = "NOT LOADED: %s" % str(e).replace("\n", " ")
    for what, value, src in store_settings():
        out[what] = "%s  [%s]" % (value, src)
    jid, var = job()
    if jid:
        out["job"] = "%s  [%s]" % (jid, var)
    return out
