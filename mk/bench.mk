# Multi-server scaling series (not part of test): see tests/stripe-bench.sh.

.PHONY: bench-stripe

bench-stripe: famd fambench ## 1/2/4/8 memory servers in network namespaces, one PE's 64 MiB get (root)
	tests/stripe-bench.sh $(STRIPE_ARGS)
