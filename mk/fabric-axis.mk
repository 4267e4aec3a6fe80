# The libfabric data plane as a test axis (issue 15): famd --provider and OPENFAM_PROVIDER
# choose libfabric instead of the project's own TCP protocol. libfabric.so.1
# is loaded at run time (nothing links it), so it is only needed to run the
# tests below, which use libfabric's software providers from Debian
# (`fi_info -l` lists them). A provider the host's libfabric lacks fails
# the run with its name: nothing is skipped silently.

DEPS_APT += libfabric1 libfabric-bin libfabric-dev

# The libfabric providers the tests below run on (Debian's software ones;
# verbs, cxi and efa need hardware; shm reaches only this host, where every
# famd and PE of the tests run). Separated by commas: ';' is part of a
# provider string. One provider: make test-features-ofi OFI_PROVIDERS=shm
OFI_PROVIDERS ?= sockets,tcp;ofi_rxm,shm

FEATURES_OFI_LOG := $(BUILD)/features-ofi.log

.PHONY: test-features-ofi test-fabric-fault

test-features-ofi: ## the famd-backed Gherkin scenarios on each libfabric provider of OFI_PROVIDERS (both backends)
	@mkdir -p $(BUILD)
	@status=0; list='$(OFI_PROVIDERS)'; IFS=','; for p in $$list; do \
		echo "test-features-ofi: provider $$p"; start=$$(date +%s); \
		if $(GO) test -count=1 -v -run 'TestFeatures' ./features/ -args -provider="$$p" >$(FEATURES_OFI_LOG) 2>&1; then \
			grep -E 'features\[' $(FEATURES_OFI_LOG) | sed 's/^ *[a-z_]*\.go:[0-9]*: //'; \
			echo "test-features-ofi: provider $$p passed in $$(( $$(date +%s) - start )) s"; \
		else \
			grep -E -e '--- FAIL|Error:|features\[|panic:|^FAIL' $(FEATURES_OFI_LOG) | head -60; \
			echo "test-features-ofi: provider $$p failed; full log in $(FEATURES_OFI_LOG)"; status=1; \
			cp $(FEATURES_OFI_LOG) $(FEATURES_OFI_LOG).$$(echo "$$p" | tr ';' '+'); \
		fi; \
	done; exit $$status

test-fabric-fault: ## a memory famd killed mid-transfer fails the PE's call within OPENFAM_TIMEOUT (tcp and each of OFI_PROVIDERS); famd on each stops on SIGTERM
	OPENFAM_TEST_PROVIDERS='$(OFI_PROVIDERS)' $(GO) test -count=1 -v -run 'TestMemoryFamdKilledMidTransfer' ./core/
	OPENFAM_TEST_PROVIDERS='$(OFI_PROVIDERS)' $(GO) test -count=1 -v -run 'TestProviderGracefulStop' ./cmd/famd/

TEST_TARGETS += test-features-ofi test-fabric-fault
