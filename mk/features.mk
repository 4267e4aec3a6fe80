# The executable specification: features/*.feature run by godog on two
# backends (the Go core and the C ABI linked into the test binary), with the
# scenario count per area, and the @wip inventory quoted by the README.

FEATURES_LOG := $(BUILD)/features.log

.PHONY: test-features test-features-race features-wip-count
test-features: ## Gherkin scenarios on the Go core and the C ABI (both backends)
	@mkdir -p $(BUILD)
	@if $(GO) test -count=1 -v -run 'TestFeatures|TestFeatureInventory' ./features/ >$(FEATURES_LOG) 2>&1; then \
		grep -E 'features\[|inventory: total' $(FEATURES_LOG) | sed 's/^ *[a-z_]*\.go:[0-9]*: //'; \
	else \
		grep -v -E '^\s+(runtime|reflect|testing|github\.com)|^\s+/' $(FEATURES_LOG) | tail -80; \
		echo "test-features failed; full log in $(FEATURES_LOG)"; exit 1; \
	fi

test-features-race: ## the same scenarios under the race detector (slower)
	$(GO) test -race -count=1 ./features/

features-wip-count: ## scenario count per area and the @wip count of features/
	@$(GO) test -count=1 -v -run TestFeatureInventory ./features/ | grep 'inventory:' | sed 's/^ *[a-z_]*\.go:[0-9]*: inventory: //'

TEST_TARGETS += test-features
