package capi

/*
#include <stdlib.h>
extern char **environ;
static char *ofam_environ_at(size_t i) { return environ[i]; }
*/
import "C"

import (
	"os"
	"strings"
)

// syncEnviron copies the C environment into Go's. A Go runtime inside a
// shared library takes its copy of the environment when the library is
// loaded, so a host that calls setenv() before fam_initialize (a test
// pointing OPENFAM_DATA_DIR at a temporary store, Python's os.environ)
// would otherwise not be heard. Called at fam_initialize only.
func syncEnviron() {
	seen := map[string]bool{}
	for i := C.size_t(0); ; i++ {
		p := C.ofam_environ_at(i)
		if p == nil {
			break
		}
		k, v, ok := strings.Cut(C.GoString(p), "=")
		if !ok || k == "" {
			continue
		}
		seen[k] = true
		if cur, set := os.LookupEnv(k); !set || cur != v {
			os.Setenv(k, v)
		}
	}
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" && !seen[k] {
			os.Unsetenv(k)
		}
	}
}
