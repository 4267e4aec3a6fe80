// hello: one PE creates a region and data items, moves an array through
// FAM with blocking, non-blocking and context operations, and checks a few
// atomics of each kind. Exits non-zero (halt) on any wrong value.
//
//   chpl -M bindings/chapel -I include -L build/lib \
//        bindings/chapel/examples/hello.chpl -o hello && ./hello
use OpenFAM;

config const regionName = "chapel-hello";
config const n = 16;

proc expect(what: string, got, want) {
  if got != want then halt(what, ": got ", got, ", want ", want);
  writeln(what, ": ", got);
}

// A region left behind by an interrupted run would make createRegion fail
// with FAM_EEXIST.
proc destroyIfPresent(fam: borrowed Fam, name: string) throws {
  try {
    var old = fam.lookupRegion(name);
    old.destroy();
  } catch e: FamError {
    if e.code != FAM_ENOTFOUND then halt(e.message());
  }
}

proc main() throws {
  var fam = initialize();
  writeln("OpenFAM ", OPENFAM_API_VERSION, ", PE ", fam.peId(), " of ",
          fam.peCount());
  destroyIfPresent(fam, regionName);
  var region = fam.createRegion(regionName, 1 << 20);

  // put/get of a whole array, blocking.
  var data = region.allocate("data", n * 8);
  var src: [0..<n] real = [i in 0..<n] i * 0.5;
  var dst: [0..<n] real;
  data.put(src);
  data.get(dst);
  expect("blocking put/get matches", (&& reduce (dst == src)), true);

  // Non-blocking on the default context: the arrays are in use until quiet.
  src = -src;
  data.put(src, nonblocking = true);
  fam.quiet();
  dst = 0.0;
  data.get(dst, nonblocking = true);
  fam.quiet();
  expect("non-blocking put/get matches", (&& reduce (dst == src)), true);

  // The same through a context of its own.
  var ctx = fam.openContext();
  var ints: [0..<n] int(32) = [i in 0..<n] i: int(32);
  var back: [0..<n] int(32);
  data.put(ints, ctx = ctx, nonblocking = true);
  ctx.quiet();
  data.get(back, ctx = ctx);
  expect("context put/get matches", (&& reduce (back == ints)), true);

  // Strided gather: every other int(32) of the item.
  var evens: [0..<n/2] int(32);
  data.gather(evens, 0, 2);
  expect("gather stride 2, element 3", evens[3], 6: int(32));

  // Atomics: the element type follows the value's type.
  var counter = region.allocate("counter", 32);
  counter.set(0, 40: int(64));
  counter.add(0, 1: int(64));
  expect("fetchAdd returns the old value", counter.fetchAdd(0, 1: int(64)),
         41: int(64));
  expect("fetch", counter.fetch(int(64), 0), 42: int(64));
  expect("compareSwap returns the old value",
         counter.compareSwap(0, 42: int(64), 7: int(64)), 42: int(64));
  expect("after compareSwap", counter.fetch(int(64), 0), 7: int(64));
  counter.set(8, 1.5);
  counter.add(8, 2.25, ctx = ctx);
  ctx.quiet();
  expect("real(64) add on a context", counter.fetch(real, 8), 3.75);
  counter.set(16, 0xF0: uint(32));
  expect("fetchOr", counter.fetchOr(16, 0x0F: uint(32)), 0xF0: uint(32));
  expect("after or", counter.fetch(uint(32), 16), 0xFF: uint(32));
  counter.set(16, toInt128(-5));
  const wide = counter.fetch(Int128, 16);
  expect("Int128 high half", wide.hi, -1);
  expect("Int128 low half", wide.lo, max(uint(64)) - 4);

  // Failures arrive as FamError with the library's code.
  try {
    fam.lookup("no-such-item", regionName);
    halt("lookup of a missing item succeeded");
  } catch e: FamError {
    expect("missing item error code", e.code, FAM_ENOTFOUND);
  }

  ctx.close();
  counter.deallocate();
  data.deallocate();
  region.destroy();
  fam.finalize();
  writeln("hello: all checks passed");
}
