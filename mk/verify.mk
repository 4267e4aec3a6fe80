# Checks of generated and hand-written sources beyond gofmt and vet:
# the gomock doubles used by the fault-injection tests, the copies of the
# error-code and atomic-name tables, staticcheck, and the formatting of the
# Gherkin specs in features/.
#
# mockgen and staticcheck are pinned in go.mod as tools and run through
# `go tool`, so their output depends on go.mod alone.

MOCKS_DIR := core/internal/mocks
# The Gherkin formatter lives in a venv of its own under build/, installed on
# first use; afterwards the check runs offline.
GHERKIN_VENV := $(BUILD)/gherkin-venv
GHERKIN_FMT  := $(GHERKIN_VENV)/bin/reformat-gherkin
GHERKIN_PKG  := reformat-gherkin==3.0.1

# $(call mockgen-all,DIR): shell commands writing every mock into DIR. The
# output goes to stdout rather than -destination so that the command line
# mockgen records in its banner does not name DIR.
mockgen-all = \
  $(GO) tool mockgen -package mocks -source=core/interfaces.go > $(1)/interfaces.go && \
  $(GO) tool mockgen -package mocks github.com/gofam/openfam/spec/proto/openfamv1 FamClient > $(1)/famclient.go

.PHONY: mocks verify-mocks tables verify-tables verify-staticcheck verify-gherkin

# Generated into a temp dir first so that a failing mockgen never leaves a
# truncated file behind.
mocks: ## regenerate the gomock doubles in core/internal/mocks
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(call mockgen-all,$$tmp) && mkdir -p $(MOCKS_DIR) && cp $$tmp/*.go $(MOCKS_DIR)/ && \
	echo "mocks: regenerated $(MOCKS_DIR)"

verify-mocks: ## regenerate the gomock doubles into a temp dir and diff with the committed files
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(call mockgen-all,$$tmp) && \
	diff -r $$tmp $(MOCKS_DIR) && echo "verify-mocks: generated mocks are up to date"

# internal/gentables/errors.table and atomics.table are the one source of the
# FAM_E* codes (number, macro, OpenFAM name, message) and of the atomic
# kinds, ops and function names; every other copy is generated from them.
tables: ## regenerate the copies of internal/gentables/*.table (core, capi, openfam.h, bindings)
	$(GO) run ./internal/gentables

verify-tables: ## check that every copy of the error-code and atomic tables matches internal/gentables/*.table
	$(GO) run ./internal/gentables -check

verify-staticcheck: ## staticcheck over every Go package
	$(GO) tool staticcheck ./...

$(GHERKIN_VENV)/.stamp:
	python3 -m venv $(GHERKIN_VENV)
	$(GHERKIN_VENV)/bin/python -m pip install -q --disable-pip-version-check $(GHERKIN_PKG)
	touch $@

verify-gherkin: $(GHERKIN_VENV)/.stamp ## check that features/*.feature are formatted as reformat-gherkin writes them
	@files=$$(find features -name '*.feature' 2>/dev/null | sort); \
	if [ -z "$$files" ]; then echo "verify-gherkin: no feature files under features/, nothing to check"; exit 0; fi; \
	$(GHERKIN_FMT) --check $$files || { echo "verify-gherkin: run $(GHERKIN_FMT) on the files above"; exit 1; }

VERIFY_TARGETS += verify-mocks verify-tables verify-staticcheck verify-gherkin
