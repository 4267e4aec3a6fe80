package core

import (
	"testing"
)

// Helpers of the package's internal tests. The API's shared suite, run on
// the embedded store and through famd, is in package core_test
// (suite_test.go, core_test.go): it needs core/embed, which imports core.

// testOpts are the Options of an embedded instance on a fresh store.
func testOpts(t *testing.T) Options {
	t.Helper()
	d := t.TempDir()
	o := DefaultOptions()
	o.DataDir, o.ShmDir, o.BackupDir = d+"/data", d+"/shm", d+"/backups"
	o.PEID, o.PECount = 0, 1
	return o
}

// open initializes an instance with o, failing the test on error.
func open(t *testing.T, o Options) *Fam {
	t.Helper()
	f, err := Initialize(o)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return f
}

// wantCode fails the test unless err has the given code.
func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	if CodeOf(err) != code {
		t.Fatalf("got error %v (code %d), want code %d (%v)", err, CodeOf(err), code, code)
	}
}

func TestCodeMacro(t *testing.T) {
	for c, want := range map[Code]string{CodeNotFound: "FAM_ENOTFOUND", CodeBackupNotFound: "FAM_EBACKUPNOTFOUND", 31: "FAM_ENOTPWRTWO", 99: "FAM_E99"} {
		if got := c.Macro(); got != want {
			t.Errorf("Code(%d).Macro() = %q, want %q", int(c), got, want)
		}
	}
}
