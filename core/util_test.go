package core

import (
	"testing"
	"unsafe"
)

func unsafe_ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func TestCodeMacro(t *testing.T) {
	for c, want := range map[Code]string{CodeNotFound: "FAM_ENOTFOUND", CodeBackupNotFound: "FAM_EBACKUPNOTFOUND", 31: "FAM_ENOTPWRTWO", 99: "FAM_E99"} {
		if got := c.Macro(); got != want {
			t.Errorf("Code(%d).Macro() = %q, want %q", int(c), got, want)
		}
	}
}
