# Integration across processes and hosts: multi-PE jobs under famrun (a
# private famd per job, PEs sharing one word and one item through the C
# ABI), the same on a metadata famd with two memory famds (items striped
# over both), famd and a memory famd killed with SIGKILL and restarted, and
# three famd "hosts" in network namespaces reached over TCP from PEs in a
# fourth, first one famd per host and then one metadata famd with memory
# famds on the other two hosts.

MULTIPE   := $(BUILD)/multipe/multipe
STRIPEDPE := $(BUILD)/stripedpe/stripedpe

.PHONY: test-integration

$(MULTIPE): bindings/c/multipe/multipe.c include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

$(STRIPEDPE): tests/stripedpe.c include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

test-integration: $(MULTIPE) $(STRIPEDPE) $(C_DEMO) famd famrun famctl ## multi-PE jobs (one famd, and two memory famds), famd and memory famd crash/restart, three famd hosts in network namespaces
	@for n in 2 3 4; do echo "== famrun -n $$n multipe"; \
	  env -u OPENFAM_SERVER $(BINDIR)/famrun -n $$n $(MULTIPE) || exit 1; done
	@for n in 2 3 4; do echo "== famrun -n $$n --servers 2 stripedpe"; \
	  env -u OPENFAM_SERVER -u OPENFAM_TOKEN_FILE $(BINDIR)/famrun -n $$n --servers 2 --timeout 120s $(STRIPEDPE) || exit 1; done
	@echo "== memory famd crash and restart"
	tests/memrestart.sh $(BINDIR) $(STRIPEDPE)
	@echo "== famd crash and restart"
	tests/restart.sh $(BINDIR) $(C_DEMO)
	@echo "== three famd hosts in network namespaces"
	@if [ "$$(id -u)" = 0 ] && command -v ip >/dev/null; then \
	  tests/netns.sh $(BINDIR) $(MULTIPE) $(STRIPEDPE); \
	else echo "test-integration: network-namespace test needs root and iproute2; not run"; fi

TEST_TARGETS += test-integration
DEPS_APT     += iproute2
