# Benchmarks (not part of test): fambench on every path beside its
# baselines (cmd/fambench/series.sh), the report of record (BENCHMARKS.md
# with plots, rendered by cmd/fambench/report.py in the project's venv),
# and the multi-server scaling series in network namespaces.

BENCH_SERIES  := cmd/fambench/series.sh
BENCH_OUT     := $(BUILD)/bench
BENCH_PLOTS   := docs/bench
BENCH_TOOLS   := famd famrun famctl fambench apps

.PHONY: bench bench-report bench-render bench-stripe test-fambench

bench: $(BENCH_TOOLS) ## quick preset (< 3 min): every fambench series on local, unix famd, tcp famd, 1/2/4 memory servers; SpMV, PageRank
	$(BENCH_SERIES) --quick $(BENCH_ARGS)

# The full series writes JSON under build/bench; bench-render turns it into
# plots and BENCHMARKS.md (so a series run elsewhere, copied into
# build/bench, can be rendered here).
bench-report: $(BENCH_TOOLS) ## the standard series, then plots (docs/bench/*.svg) and BENCHMARKS.md
	rm -rf $(BENCH_OUT)
	$(BENCH_SERIES) --out $(BENCH_OUT) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory bench-render

bench-render: python-venv ## render build/bench/*.json into docs/bench/*.svg and BENCHMARKS.md (matplotlib in build/venv)
	$(PY) cmd/fambench/report.py --in $(BENCH_OUT) --plots $(BENCH_PLOTS) --md BENCHMARKS.md

# Every subcommand once, on the embedded store and on a famd over TCP (rtt,
# persist and get-loop over its Unix socket too), at the smallest settings:
# the tool runs, its JSON parses and every figure and baseline is positive.
# (Figures themselves are not checked: the machine running the tests is
# busy.)
test-fambench: $(BENCH_TOOLS) ## fambench smoke test: every subcommand, text/CSV/JSON, local, TCP and Unix socket
	cmd/fambench/smoke.sh $(BINDIR)

bench-stripe: famd fambench ## 1/2/4/8 memory servers in network namespaces, one PE's 64 MiB get (root)
	tests/stripe-bench.sh $(STRIPE_ARGS)

TEST_TARGETS += test-fambench
