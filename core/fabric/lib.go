package fabric

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Library is the shared object Open loads (at run time, never linked).
const Library = "libfabric.so.1"

// lib holds the entry points libfabric exports by name; everything else
// is reached through the ops tables of the descriptors these return.
type lib struct {
	getinfo, freeinfo, dupinfo, fabric, strerror uintptr
}

// libraryName is what load opens (tests point it elsewhere).
var libraryName = Library

var (
	libOnce sync.Once
	libVal  *lib
	libErr  error
)

// providerDefaults are libfabric variables load sets where the user has
// not, before the library reads them (its providers read their variables
// when first asked, in fi_getinfo).
//
// FI_SOCKETS_PE_WAITTIME=0: the sockets provider's progress thread polls
// for 10 ms after each operation (its default), taking a core away from
// the threads that do the work on a host with few cores: on a 2-core host
// at load 10, a 256-byte get took 8 to 12 times as long with it and a
// 4 MiB get 2 to 3 times (go test -bench 'Get256/sockets|Get4M/sockets'
// ./core/fabric with the variable unset, then 0). Its
// endpoints progress on their own (FI_PROGRESS_AUTO) and this package's
// progress goroutine and callers poll after work anyway.
var providerDefaults = [][2]string{{"FI_SOCKETS_PE_WAITTIME", "0"}}

// load opens libfabric.so.1 once per process. A missing library gives an
// error wrapping ErrNoLibfabric with the loader's message.
func load() (*lib, error) {
	libOnce.Do(func() {
		for _, v := range providerDefaults {
			if _, set := os.LookupEnv(v[0]); !set {
				// os.Setenv reaches the C environment libfabric reads
				// (through cgo, or purego's stand-in for it).
				os.Setenv(v[0], v[1])
			}
		}
		h, err := purego.Dlopen(libraryName, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			libErr = fmt.Errorf("%w: %v", ErrNoLibfabric, err)
			return
		}
		l := &lib{}
		for _, s := range []struct {
			name string
			p    *uintptr
		}{
			{"fi_getinfo", &l.getinfo}, {"fi_freeinfo", &l.freeinfo}, {"fi_dupinfo", &l.dupinfo},
			{"fi_fabric", &l.fabric}, {"fi_strerror", &l.strerror},
		} {
			if *s.p, err = purego.Dlsym(h, s.name); err != nil {
				libErr = fmt.Errorf("%w: %s lacks %s: %v", ErrNoLibfabric, libraryName, s.name, err)
				return
			}
		}
		libVal = l
	})
	return libVal, libErr
}

// callInt calls a libfabric function returning int (the upper half of the
// return register is undefined, hence the narrowing).
//
//go:uintptrescapes
func callInt(fn uintptr, args ...uintptr) int {
	r, _, _ := purego.SyscallN(fn, args...)
	return int(int32(r))
}

// callSsize calls a libfabric function returning ssize_t.
//
//go:uintptrescapes
func callSsize(fn uintptr, args ...uintptr) int {
	r, _, _ := purego.SyscallN(fn, args...)
	return int(int64(r))
}

// callPtr calls a libfabric function returning a pointer.
//
//go:uintptrescapes
func callPtr(fn uintptr, args ...uintptr) unsafe.Pointer {
	r, _, _ := purego.SyscallN(fn, args...)
	return *(*unsafe.Pointer)(unsafe.Pointer(&r))
}

// errstr is fi_strerror(-code) for a negative libfabric return value.
func (l *lib) errstr(code int) string {
	if code < 0 {
		code = -code
	}
	r, _, _ := purego.SyscallN(l.strerror, uintptr(code))
	return fmt.Sprintf("%s (%d)", goString(*(*unsafe.Pointer)(unsafe.Pointer(&r))), code)
}

// goString copies the NUL-terminated C string at p.
func goString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// cstr returns s as a NUL-terminated byte slice (Go memory: keep it alive
// across the call that reads it).
func cstr(s string) []byte { return append([]byte(s), 0) }

// up shortens the conversions of call arguments: write them as
// uintptr(up(&x)) inside the argument list of callInt or callSsize, whose
// uintptrescapes directive keeps x alive (and in place) for the call.
type up = unsafe.Pointer
