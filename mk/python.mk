# Python binding (bindings/python): a venv under build/, the package installed
# into it from this tree (with the library as package data), and its tests.
# Test dependencies go into the venv, not into DEPS_PIP.

PY_DIR       := bindings/python
PY_VENV      := $(BUILD)/venv
PY           := $(PY_VENV)/bin/python
PY_TEST_DEPS := pytest hypothesis numpy nbclient nbformat ipykernel setuptools wheel matplotlib

.PHONY: python-venv python-install test-python bench-python

# Remade when this file changes, so a venv made before a dependency was
# added gets it (pip skips what is installed already).
$(PY_VENV)/.deps-stamp: mk/python.mk
	python3 -m venv $(PY_VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(PY_TEST_DEPS)
	touch $@

python-venv: $(PY_VENV)/.deps-stamp ## create build/venv with the Python test dependencies

# Reinstalled every time so the venv always carries the library just built.
python-install: lib python-venv ## install the openfam Python package into build/venv
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
	  --force-reinstall ./$(PY_DIR)

# Run from the repository root so the installed package (not the source
# directory) is imported. The multi-PE tests, and examples/spmv.py as
# `famrun -n 4`, run under $(BINDIR)/famrun, each job with its own famd.
test-python: python-install famd famrun apps ## run the Python binding's tests (pytest, notebook, examples)
	FAMRUN=$(abspath $(BINDIR))/famrun $(PY) -m pytest -q -p no:cacheprovider $(PY_DIR)/tests

bench-python: python-install ## print the Python binding's overhead figures beside their baselines
	$(PY) $(PY_DIR)/bench/bench.py

TEST_TARGETS += test-python
