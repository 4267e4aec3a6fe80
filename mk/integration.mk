# Integration across processes and hosts: multi-PE jobs under famrun (a
# private famd per job, PEs sharing one word and one item through the C
# ABI), famd killed with SIGKILL and restarted, and three famd "hosts" in
# network namespaces reached over TCP from PEs in a fourth.

MULTIPE := $(BUILD)/multipe/multipe

.PHONY: test-integration

$(MULTIPE): bindings/c/multipe/multipe.c include/openfam.h $(wildcard $(LIB)) | lib
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) -o $@ $< $(APP_LDFLAGS)

test-integration: $(MULTIPE) $(C_DEMO) famd famrun ## multi-PE jobs, famd crash/restart, three famd hosts in network namespaces
	@for n in 2 3 4; do echo "== famrun -n $$n multipe"; \
	  env -u OPENFAM_SERVER $(BINDIR)/famrun -n $$n $(MULTIPE) || exit 1; done
	@echo "== famd crash and restart"
	tests/restart.sh $(BINDIR) $(C_DEMO)
	@echo "== three famd hosts in network namespaces"
	@if [ "$$(id -u)" = 0 ] && command -v ip >/dev/null; then \
	  tests/netns.sh $(BINDIR) $(MULTIPE); \
	else echo "test-integration: network-namespace test needs root and iproute2; not run"; fi

TEST_TARGETS += test-integration
DEPS_APT     += iproute2
