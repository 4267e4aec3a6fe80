"""A job script that checks sharing between PEs; correct for any PE count.

Run alone (one PE) by the test suite, and under `famrun -n N` when famrun
exists. Usage: python multipe_check.py REGION_NAME
"""

import os
import sys

import numpy as np

import openfam

ROUNDS = 200


def main(region_name: str) -> None:
    with openfam.Fam("multipe") as fam:
        me, n = fam.pe_id, fam.pe_count
        if me == 0:
            region = fam.create_region(region_name, 1 << 20, 0o600)
            region.allocate(64, "counter")
            region.allocate(8 * n, "table")
            shared = region.allocate(64)  # unnamed: reachable by descriptor only
            region.allocate(16, "desc").put(np.array(shared.global_descriptor, dtype=np.uint64))
        fam.barrier()
        counter = fam.lookup("counter", region_name)
        table = fam.lookup("table", region_name)
        desc = fam.lookup("desc", region_name).get_into(np.empty(2, dtype=np.uint64))
        shared = openfam.DataItem.from_global(fam, (int(desc[0]), int(desc[1])))

        for _ in range(ROUNDS):
            counter.fetch_add(0, 1, np.int64)
        shared.fetch_max(8, me, np.uint32)
        table.put(np.array([me * 10 + 1], dtype=np.int64), 8 * me, blocking=False)
        fam.quiet()
        fam.barrier()

        assert counter.fetch(0, np.int64) == ROUNDS * n, counter.fetch(0, np.int64)
        assert shared.fetch(8, np.uint32) == n - 1
        rows = table.gather(range(n), np.int64)
        assert rows.tolist() == [i * 10 + 1 for i in range(n)], rows
        fam.barrier()
        if me == 0:
            fam.lookup_region(region_name).destroy()
        # One write(2) of the whole line: PEs share famrun's stdout, and
        # print() may issue the text and the newline separately (e.g. with
        # PYTHONUNBUFFERED), letting another PE's line land in between.
        sys.stdout.flush()
        os.write(1, b"PE %d/%d ok\n" % (me, n))


if __name__ == "__main__":
    main(sys.argv[1])
