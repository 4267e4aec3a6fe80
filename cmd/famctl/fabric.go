package main

// providerName is a server's data-plane provider as shown: a famd that
// predates the field announces none, and runs the project's own protocol.
func providerName(p string) string {
	if p == "" {
		return "tcp"
	}
	return p
}

// fabricLine describes a data plane in one line: the provider and, for a
// libfabric one, its fabric address.
func fabricLine(provider, addr string) string {
	if addr == "" {
		return provider
	}
	return provider + ", fabric address " + addr
}
