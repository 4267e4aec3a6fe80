# The Go suites under load: every Go test package run several times over
# (-count) with the race detector while CPU hogs keep every core busy, as a
# loaded build machine would. Deadlines in tests must hold here; a test
# that fails only under test-stress waits on something with too short a
# deadline, or races.
#
#   make test-stress                       # -count=3, two hogs
#   make test-stress STRESS_COUNT=5 STRESS_PKGS=./core/rpc/

STRESS_COUNT ?= 3
STRESS_HOGS  ?= 2
# Every Go test package: the core, famd and its tools (which start famds,
# memory servers and clients of them), the C ABI's Go tests and the Gherkin
# scenarios on both backends.
STRESS_PKGS  ?= $(sort $(GO_PKGS) $(FAMD_PKGS) $(TOOLS_PKGS) ./capi/ ./features/)

.PHONY: test-stress

# The hogs are subshells of the recipe's shell; the trap ends them however
# the recipe ends (tests failing, Ctrl-C, make killed with TERM).
test-stress: ## Go suites with -count=3 beside two CPU hogs (STRESS_COUNT, STRESS_HOGS, STRESS_PKGS)
	@hogs=""; trap 'kill $$hogs 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	for i in $$(seq $(STRESS_HOGS)); do ( trap - INT TERM; while :; do :; done ) & hogs="$$hogs $$!"; done; \
	echo "test-stress: $(STRESS_HOGS) CPU hogs (pids$$hogs) beside go test -race -count=$(STRESS_COUNT)"; \
	start=$$(date +%s); \
	$(GO) test -race -count=$(STRESS_COUNT) -timeout 60m $(STRESS_PKGS); rc=$$?; \
	echo "test-stress: rc=$$rc after $$(( $$(date +%s) - start ))s"; exit $$rc
