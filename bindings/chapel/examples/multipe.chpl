// multipe: every PE adds its rank + 1 to a shared counter and writes its
// own slot of a shared array; PE 0 checks both after a barrier. Run under
// the launcher, one process per PE:
//
//   famrun -n 2 ./multipe
//
// Alone it runs as a single PE. Exits non-zero (halt) on a wrong value.
use OpenFAM;

config const regionName = "chapel-multipe";

proc main() throws {
  var fam = initialize();
  const me = fam.peId(), npes = fam.peCount();

  if me == 0 {
    try {
      var old = fam.lookupRegion(regionName);
      old.destroy();
    } catch e: FamError {
      if e.code != FAM_ENOTFOUND then halt(e.message());
    }
    var region = fam.createRegion(regionName, 1 << 20);
    var first = region.allocate("counter", 8, 0o666);
    first.set(0, 0: int(64));
    region.allocate("slots", npes * 8, 0o666);
  }
  // Nobody looks the items up before PE 0 has made them.
  fam.barrierAll();

  var counter = fam.lookup("counter", regionName);
  var slots = fam.lookup("slots", regionName);
  counter.add(0, (me + 1): int(64));
  var mine: [0..0] int(64) = me * 100;
  slots.put(mine, offset = me * 8);
  fam.barrierAll();

  if me == 0 {
    const total = counter.fetch(int(64), 0);
    if total != npes * (npes + 1) / 2 then
      halt("counter is ", total, ", want ", npes * (npes + 1) / 2);
    var all: [0..<npes] int(64);
    slots.get(all);
    for i in 0..<npes do
      if all[i] != i * 100 then halt("slot ", i, " is ", all[i]);
    writeln("multipe: ", npes, " PEs, counter ", total, ", slots ", all);
  }
  // Keep the region until every PE is done reading it.
  fam.barrierAll();
  counter.close();
  slots.close();
  if me == 0 then fam.lookupRegion(regionName).destroy();
  fam.finalize();
}
