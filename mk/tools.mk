# famrun (the job launcher) and famctl (the admin CLI). famrun looks for famd
# next to itself, so `make all` puts all three in build/bin; famd's own rule is
# in mk/famd.mk and famrun does not need it to build (only to run a job
# without OPENFAM_SERVER).
#
# The rules are phony: go build's cache decides what is stale, which a list of
# Go sources here could only approximate.

TOOLS_PKGS := ./cmd/famrun/ ./cmd/famctl/

.PHONY: famrun famctl tools test-tools

tools: famrun famctl ## build famrun and famctl into build/bin

famrun: ## build the famrun launcher into build/bin
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BINDIR)/famrun ./cmd/famrun

famctl: ## build the famctl admin CLI into build/bin
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BINDIR)/famctl ./cmd/famctl

test-tools: ## famrun and famctl tests (race detector on; they build famd themselves)
	$(GO) test -race -count=1 $(TOOLS_PKGS)

ALL_TARGETS  += famrun famctl
TEST_TARGETS += test-tools
