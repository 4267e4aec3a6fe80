package core

// SetProviderWarn replaces the printer of provider warnings (see
// fabricplane.go) and returns the function restoring it.
func SetProviderWarn(f func(string)) (restore func()) {
	old := providerWarn
	providerWarn = f
	return func() { providerWarn = old }
}
