# Set-up: what `make test`, `make demo` and `make verify` do before anything
# else (mk/setup.sh check), so that the README's two commands work on a new
# machine. It checks that Go is as new as go.mod needs and installs the
# Debian packages of DEPS_APT (apt-get update first, and only when one is
# missing), the build tools of DEPS_TOOLS and the PyPI packages of DEPS_PIP
# when run as root; otherwise it prints the one command to run and stops.
# When everything is there it takes a fraction of a second and says nothing.
#
# The go command itself is chosen in the Makefile (GO), through
# `mk/setup.sh go-path`.

SETUP_ENV = GO_WANT=$(GO_WANT) GO_TOOLCHAIN=$(GO_TOOLCHAIN) GO="$(GO)" \
            DEPS_APT="$(sort $(DEPS_APT))" DEPS_PIP="$(sort $(DEPS_PIP))" DEPS_TOOLS="$(DEPS_TOOLS)"

# command:package, for tools a Debian machine may lack; checked by running
# them, not through dpkg, so that fresh-clone checks that remove DEPS_APT
# leave the compilers and Python alone. ensurepip stands for `python3 -m
# venv` working (Debian splits it into python3-venv).
DEPS_TOOLS := gcc:gcc g++:g++ python3:python3 ensurepip:python3-venv nm:binutils readelf:binutils

.PHONY: setup setup-go deps

setup: ## check Go and install the packages the build and tests need (root; else says what to run)
	@$(SETUP_ENV) sh mk/setup.sh check

setup-go: ## download the Go release go.mod needs from the Go module proxy, for make to use instead of an older go
	@$(SETUP_ENV) sh mk/setup.sh setup-go

deps: setup ## the same as setup (kept for old scripts)

.PHONY: test-setup
test-setup: ## tests of the set-up step with fake go commands and package lists (installs nothing)
	tests/setup_test.sh

TEST_TARGETS += test-setup
