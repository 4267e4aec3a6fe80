package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopiesMatchTables is `make verify-tables` as a test: every generated
// copy in the repository equals what the tables make.
func TestCopiesMatchTables(t *testing.T) {
	if err := run(repoRoot(t), true); err != nil {
		t.Fatal(err)
	}
}

// TestCheckCatchesDrift edits one copy at a time in a scratch copy of the
// files involved and expects -check to fail naming that file, and a plain
// run to repair it.
func TestCheckCatchesDrift(t *testing.T) {
	root := repoRoot(t)
	edits := []struct{ path, from, to string }{
		{"include/openfam.h", "#define FAM_ENOTFOUND 8\n", "#define FAM_ENOTFOUND 80\n"},
		{"include/fam/fam_exception.h", "FAM_ERR_NOTFOUND = 8,", "FAM_ERR_NOTFOUND = 7,"},
		{"bindings/python/openfam/_errors.py", `"FAM_EEXIST": 9,`, `"FAM_EEXISTS": 9,`},
		{"bindings/chapel/OpenFAM.chpl", "param FAM_ERANGE = 13;", "param FAM_ERANGE = 31;"},
		{"core/errors_gen.go", `"not found"`, `"no such thing"`},
		{"core/amo/names_gen.go", `"fetch_add"`, `"fadd"`},
		{"capi/tables_gen.go", "C.FAM_EINVAL-int(core.CodeInvalid)", "C.FAM_EINVAL-int(core.CodeNullPtr)"},
		{"docs/API.md", "FAM_ENOTFOUND 8", "FAM_ENOTFOUND 9"},
	}
	for _, e := range edits {
		t.Run(filepath.Base(e.path), func(t *testing.T) {
			tmp := scratch(t, root)
			p := filepath.Join(tmp, e.path)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), e.from) {
				t.Fatalf("%s lacks %q", e.path, e.from)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.from, e.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			err = run(tmp, true)
			if err == nil || !strings.Contains(err.Error(), e.path) {
				t.Fatalf("check after editing %s: %v, want an error naming the file", e.path, err)
			}
			if e.path == "docs/API.md" {
				return // prose is checked, never rewritten
			}
			if err := run(tmp, false); err != nil {
				t.Fatal(err)
			}
			if err := run(tmp, true); err != nil {
				t.Fatalf("after regenerating: %v", err)
			}
		})
	}
}

// TestTableErrors: a malformed table is refused with its file and line.
func TestTableErrors(t *testing.T) {
	root := repoRoot(t)
	for _, c := range []struct{ file, from, to, want string }{
		{"errors.table", "\n9  | FAM_EEXIST", "\n10 | FAM_EEXIST", "errors.table:"},
		{"errors.table", "| CodeExists           | already exists", "| CodeExists           | -", "needs a message"},
		{"errors.table", "FAM_ERANGE ", "FAM_EINVAL ", "used twice"},
		{"atomics.table", "op | 3  | Add", "op | 4  | Add", "atomics.table:"},
	} {
		tmp := scratch(t, root)
		p := filepath.Join(tmp, "internal/gentables", c.file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.from) {
			t.Fatalf("%s lacks %q", c.file, c.from)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), c.from, c.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := run(tmp, true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q -> %q: got %v, want an error with %q", c.file, c.from, c.to, err, c.want)
		}
	}
}

// repoRoot is the repository root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// scratch copies the tables and every file the generator reads or writes
// into a temporary root.
func scratch(t *testing.T, root string) string {
	t.Helper()
	tmp := t.TempDir()
	files := append([]string{"internal/gentables/errors.table", "internal/gentables/atomics.table"}, docChecks...)
	for _, o := range outputs(&tables{}) {
		files = append(files, o.path)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(tmp, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}
