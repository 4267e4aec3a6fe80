package main

import (
	"strings"
	"unicode"
)

// checkProvider validates --provider: "tcp" (the default) or a libfabric
// provider string. Whether libfabric has that provider is found when the
// endpoint opens (famd then exits with a message naming it and
// `fi_info -l`); here only what can never be a provider is refused.
func (c *config) checkProvider() (string, error) {
	p := strings.TrimSpace(c.provider)
	if p == "" {
		return "", usagef("--provider is empty: give tcp (the default) or a libfabric provider such as \"tcp;ofi_rxm\" (fi_info -l lists them)")
	}
	if strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 || len(p) > 128 {
		return "", usagef("--provider %q is not a provider name: give tcp or a libfabric provider such as \"tcp;ofi_rxm\" (fi_info -l lists them)", c.provider)
	}
	return p, nil
}
