package main

import (
	"testing"

	"github.com/gofam/openfam/internal/version/versiontest"
)

// --version prints "famd VERSION" (the stamped version) on stdout, nothing on
// stderr, and exits 0.
func TestVersionFlag(t *testing.T) { versiontest.CheckFlag(t, "famd", run) }
