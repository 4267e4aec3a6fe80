package fabric

import (
	"os"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestProviderDefaults: loading libfabric sets the variables of
// providerDefaults in the C environment libfabric reads (not only in Go's
// copy of it), and leaves a value the user set alone.
func TestProviderDefaults(t *testing.T) {
	for _, v := range providerDefaults {
		if _, set := os.LookupEnv(v[0]); set {
			t.Skipf("SKIP: %s is set by the caller", v[0])
		}
	}
	if _, err := load(); err != nil {
		t.Skipf("SKIP: %v", err)
	}
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("SKIP: no libc.so.6: %v", err)
	}
	getenv, err := purego.Dlsym(libc, "getenv")
	if err != nil {
		t.Skipf("SKIP: %v", err)
	}
	for _, v := range providerDefaults {
		name := cstr(v[0])
		got := goString(callPtr(getenv, uintptr(unsafe.Pointer(&name[0]))))
		if got != v[1] {
			t.Errorf("C getenv(%s) = %q after load, want %q", v[0], got, v[1])
		}
	}
}
