# libfabric data plane (core/fabric, issue 15). libfabric is loaded at run
# time, never linked; the build needs none of it. The tests run on the
# software providers Debian ships (sockets, tcp;ofi_rxm, shm) and skip a
# missing one by name; the headers (libfabric-dev) let TestABI check the
# struct layouts the package mirrors, and libfabric-bin has fi_pingpong,
# the baseline of bench-fabric.

DEPS_APT += libfabric1 libfabric-bin libfabric-dev

.PHONY: test-fabric bench-fabric

# test-go runs the package's tests too; this target says which providers
# ran and what each supports (go test hides a passing package's skips).
test-fabric: ## libfabric providers present here and what each supports (a missing one is named, never skipped silently)
	$(GO) test -count=1 -run 'TestProviders|TestABI' -v ./core/fabric/

bench-fabric: ## libfabric data plane beside fi_pingpong: 256 B get, 4 MiB get/put, fetch_add, shm 8 B get, idle CPU (tests/fabric-bench.sh)
	tests/fabric-bench.sh

TEST_TARGETS += test-fabric
