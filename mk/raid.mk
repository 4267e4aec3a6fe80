# Redundant regions (issue 16): RAID1 and RAID5 over memory servers must
# survive a memory famd's kill -9 with every acknowledged byte.
#
# test-raid runs, in order: the chaos script (famrun -n 3 --servers 3, PEs
# on a RAID1 and a RAID5 region while a memory famd is killed -9 and
# restarted three times; tests/raid-chaos.sh), the same with the famds on
# hosts in network namespaces (one round; needs root and iproute2), and the
# @redundancy Gherkin scenarios on both backends (memory famds as
# processes of their own, from build/bin). raid-bench prints the figures
# of the issue (RAID1 and RAID5 against NONE on the same servers, degraded
# reads, a 1 GiB rebuild).

RAIDPE    := $(BUILD)/raid/raidpe
RAIDBENCH := $(BUILD)/raid/raidbench
RAIDTRACE := $(BUILD)/raid/raidtrace
RAID_LOG  := $(BUILD)/raid-features.log

.PHONY: test-raid test-raid-features raid-bench raid-trace

$(RAIDPE): tests/raid/raidpe.c include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

$(RAIDBENCH): tests/raid/raidbench.c include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

$(RAIDTRACE): tests/raid/raidtrace.c include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

# Each part runs even when an earlier one failed (so that one failure does
# not hide the others' results); the target fails at the end if any did.
test-raid: $(RAIDPE) famd famrun famctl ## redundant regions: kill -9/restart chaos under famrun --servers 3 (and netns), @redundancy scenarios
	@rc=0; \
	echo "== RAID1 and RAID5 under famrun -n 3 --servers 3, a memory famd killed -9 and restarted 3 times"; \
	tests/raid-chaos.sh $(BINDIR) $(RAIDPE) 3 || rc=1; \
	echo "== the same over network namespaces (one round)"; \
	if [ "$$(id -u)" = 0 ] && command -v ip >/dev/null; then \
	  RAID_NETNS=1 tests/raid-chaos.sh $(BINDIR) $(RAIDPE) 1 || rc=1; \
	else echo "test-raid: network-namespace case needs root and iproute2; not run"; fi; \
	echo "== @redundancy scenarios, both backends"; \
	$(MAKE) --no-print-directory test-raid-features || rc=1; \
	exit $$rc

test-raid-features: famd famctl ## the @redundancy scenarios alone, both backends
	@mkdir -p $(BUILD)
	@if OPENFAM_BINDIR=$(abspath $(BINDIR)) $(GO) test -count=1 -v -timeout 30m -run 'TestFeatures(Go|CABI)$$' ./features/ \
	    -args -godog.tags=@redundancy >$(RAID_LOG) 2>&1; then \
		grep -E 'features\[' $(RAID_LOG) | sed 's/^ *[a-z_]*\.go:[0-9]*: //'; \
	else \
		grep -v -E '^\s+(runtime|reflect|testing|github\.com)|^\s+/' $(RAID_LOG) | tail -80; \
		echo "test-raid-features failed; full log in $(RAID_LOG)"; exit 1; \
	fi

raid-bench: $(RAIDBENCH) famd famctl ## RAID1/RAID5 against NONE: put/get/fetch_add, RAID5 and degraded-read bandwidth, 1 GiB rebuild
	tests/raid-bench.sh $(BINDIR) $(RAIDBENCH)

raid-trace: $(RAIDTRACE) $(RAIDBENCH) famd famctl ## RAID1 vs NONE 256 B puts: wall and CPU per put of client and memory famds, scheduler switches between the two copies' writes (perf, root)
	RAIDBENCH_CMD="tests/raid/raidtrace.sh $(abspath $(RAIDTRACE))" tests/raid-bench.sh $(BINDIR) $(RAIDBENCH)

TEST_TARGETS += test-raid
DEPS_APT     += jq iproute2
