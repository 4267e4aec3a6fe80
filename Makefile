# OpenFAM in Go: top-level entry points. `make help` lists them.
#
# Each area adds its own targets in mk/<area>.mk and appends to the lists
# below, so areas do not edit each other's rules.

# Go: go.mod's go line is the oldest release that builds the module
# (GO_WANT). When the go on PATH is older (Debian's is), make uses the
# release `make setup-go` downloaded (GO_TOOLCHAIN), and puts it first on
# PATH for the tools make runs (pip builds the library with make too).
GO_WANT      := $(shell sed -n 's/^go \([0-9]*\.[0-9]*\).*/\1/p' go.mod)
GO_TOOLCHAIN := go1.26.8
ifndef GO
GO := $(shell GO_WANT=$(GO_WANT) GO_TOOLCHAIN=$(GO_TOOLCHAIN) sh mk/setup.sh go-path)
endif
ifneq ($(filter /%,$(GO)),)
export PATH := $(patsubst %/,%,$(dir $(GO))):$(PATH)
endif
CC       ?= gcc
CXX      ?= g++
PREFIX   ?= /usr/local
BUILD    := build
LIBDIR   := $(BUILD)/lib
BINDIR   := $(BUILD)/bin
LIB      := $(LIBDIR)/libopenfam.so.0
ABS_LIBDIR := $(abspath $(LIBDIR))

# The version every tool reports (--version) and famd announces: the
# release in VERSION, then, in a git checkout, the commit it was built from
# ("3.2.0-gb01ac03", "-dirty" with uncommitted changes; a tag v3.2.0 on the
# commit gives plain "3.2.0"). Outside git (a release tarball) VERSION alone.
# `make OPENFAM_VERSION=...` overrides it, e.g. for a distribution package.
VERSION_BASE := $(shell cat VERSION)
ifndef OPENFAM_VERSION
OPENFAM_VERSION := $(shell sh mk/version.sh)
endif
# Go programs take it at link time; C programs as -DOPENFAM_VERSION. The
# stamp file changes only when the version does, so C programs that print
# it are rebuilt then and only then.
VERSION_LDFLAGS := -X github.com/gofam/openfam/internal/version.Version=$(OPENFAM_VERSION)
VERSION_STAMP   := $(BUILD)/version
VERSION_CFLAGS  := -DOPENFAM_VERSION='"$(OPENFAM_VERSION)"'

# Flags for C and C++ programs that use the library from the build tree.
APP_CFLAGS   := -I$(CURDIR)/include -Wall -Wextra -Werror -g -O2
APP_LDFLAGS  := -L$(ABS_LIBDIR) -lopenfam -Wl,-rpath,$(ABS_LIBDIR) -lpthread

ALL_TARGETS    :=
TEST_TARGETS   :=
VERIFY_TARGETS :=
DEMO_TARGETS   :=
CLEAN_PATHS    := $(BUILD)
# Debian packages and PyPI packages the build and tests need; `make setup`
# (run by test, demo and verify) installs them.
DEPS_APT       :=
DEPS_PIP       :=

include $(sort $(wildcard mk/*.mk))

.DEFAULT_GOAL := all
.PHONY: all test verify demo clean help

all: $(ALL_TARGETS) ## build the library, headers, tools and examples

# test, demo and verify run `make setup` first, then their parts in a make
# of their own, which picks up a Go toolchain setup just downloaded. test
# keeps going after a failing suite (-k), so that one failure does not hide
# the results of the suites after it; make still fails at the end.
test: ## set up (make setup), then run every test suite
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory -k $(TEST_TARGETS)

verify: ## set up (make setup), then formatting, vet, generated files, exported symbols
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory -k $(VERIFY_TARGETS)

demo: ## set up (make setup), then run the demo on the embedded default (no daemon)
	@$(MAKE) --no-print-directory setup
	@$(MAKE) --no-print-directory $(DEMO_TARGETS)

clean: ## remove build outputs
	rm -rf $(CLEAN_PATHS)

# Rewritten only when the version changes (see VERSION_STAMP).
$(VERSION_STAMP): FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = '$(OPENFAM_VERSION)' ] || echo '$(OPENFAM_VERSION)' > $@

.PHONY: FORCE
FORCE:

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sort -u | \
	  awk 'BEGIN {FS = ":.*## "} {printf "  %-18s %s\n", $$1, $$2}'
