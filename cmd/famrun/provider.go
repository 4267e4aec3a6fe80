package main

import (
	"fmt"
	"strings"
	"unicode"
)

// The data plane of a job (issue 15): --provider (or OPENFAM_PROVIDER)
// starts every private famd with famd --provider and gives the PEs the
// same OPENFAM_PROVIDER, so that one setting serves the whole job.

// checkProvider returns why p cannot be a provider, or "".
func checkProvider(p string) string {
	if p == "" {
		return ""
	}
	if strings.TrimSpace(p) != p || strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 || len(p) > 128 {
		return fmt.Sprintf("--provider %q is not a provider name: give tcp or a libfabric provider such as \"tcp;ofi_rxm\" (fi_info -l lists them)", p)
	}
	return ""
}

// providerArgs are the famd flags of the job's provider.
func providerArgs(cfg config) []string {
	if cfg.provider == "" {
		return nil
	}
	return []string{"--provider", cfg.provider}
}

// withProvider sets OPENFAM_PROVIDER in env to p (replacing an inherited
// value); "" leaves env as it is.
func withProvider(env []string, p string) []string {
	if p == "" {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OPENFAM_PROVIDER=") {
			out = append(out, kv)
		}
	}
	return append(out, "OPENFAM_PROVIDER="+p)
}
