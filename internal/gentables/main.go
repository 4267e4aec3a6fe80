// Command gentables writes every copy of the FAM error codes and of the
// atomic operation names from the two tables beside it (errors.table,
// atomics.table), the way Sandia OpenSHMEM generates its typed bindings from
// one table.
//
//	go run ./internal/gentables          # rewrite the copies
//	go run ./internal/gentables -check   # fail (exit 1) if any copy differs
//
// Whole generated files carry a "Code generated ... DO NOT EDIT." banner.
// Copies inside hand-written files (include/openfam.h, the Python and Chapel
// bindings, the OpenFAM compatibility header) sit between a BEGIN GENERATED
// and an END GENERATED line; only the lines between them are rewritten.
// The error numbers quoted in docs/*.md are checked, never rewritten.
//
// The command finds the repository root by walking up from the working
// directory to go.mod, so it also runs from go:generate lines.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Self is how the generated files name their generator.
const self = "go run ./internal/gentables"

// codeRow is one line of errors.table.
type codeRow struct {
	Num     int
	Macro   string // FAM_ENOTFOUND
	OpenFAM string // FAM_ERR_NOTFOUND
	Const   string // CodeNotFound, "" when the library never returns it
	Msg     string // "not found", "" when Const is ""
}

// kindRow and opRow are the lines of atomics.table.
type kindRow struct {
	Num    int
	Const  string // amo.Int32
	Enum   string // OFAM_K_INT32
	Suffix string // int32
}

type opRow struct {
	Num         int
	Const       string // amo.Add
	Enum        string // OFAM_OP_ADD
	Name, Fetch string // add, fetch_add
}

// tables is everything read from the two table files.
type tables struct {
	codes []codeRow
	kinds []kindRow
	ops   []opRow
}

func main() {
	check := flag.Bool("check", false, "compare the copies with the tables instead of writing them; exit 1 on any difference")
	root := flag.String("root", "", "repository root (default: the directory of the nearest go.mod above the working directory)")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gentables:", err)
		os.Exit(1)
	}
}

// run generates (or, with check, compares) every copy under root.
func run(root string, check bool) error {
	if root == "" {
		var err error
		if root, err = findRoot(); err != nil {
			return err
		}
	}
	t, err := load(root)
	if err != nil {
		return err
	}
	var drift []string
	for _, o := range outputs(t) {
		path := filepath.Join(root, o.path)
		old, err := os.ReadFile(path)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && o.whole) {
			return err
		}
		want, err := o.render(old)
		if err != nil {
			return fmt.Errorf("%s: %w", o.path, err)
		}
		if bytes.Equal(old, want) {
			continue
		}
		if check {
			drift = append(drift, o.path+": "+firstDiff(old, want))
			continue
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			return err
		}
		fmt.Println("gentables: wrote", o.path)
	}
	for _, d := range docChecks {
		msgs, err := checkDoc(root, d, t)
		if err != nil {
			return err
		}
		drift = append(drift, msgs...)
	}
	if len(drift) > 0 {
		return fmt.Errorf("copies differ from internal/gentables/*.table (fix the table, then run %s):\n  %s",
			self, strings.Join(drift, "\n  "))
	}
	if check {
		fmt.Println("gentables: every copy matches internal/gentables/*.table")
	}
	return nil
}

// findRoot walks up from the working directory to the one holding go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory; pass -root")
		}
		dir = up
	}
}

// ---- reading the tables ---------------------------------------------------

// rows returns the "|"-separated, trimmed fields of every line of a table
// file that is neither blank nor a comment, with its line number.
func rows(path string) (out [][]string, lines []int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "|")
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		out = append(out, f)
		lines = append(lines, i+1)
	}
	return out, lines, nil
}

var (
	identRE  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	macroRE  = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	cnameRE  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	famErrRE = regexp.MustCompile(`^FAM_E[A-Z0-9]+$`)
)

// load reads and validates both tables: numbers strictly increasing from 1
// without gaps (so arrays indexed by them have no holes) and names unique.
func load(root string) (*tables, error) {
	dir := filepath.Join(root, "internal", "gentables")
	t := &tables{}
	bad := func(file string, line int, format string, args ...any) error {
		return fmt.Errorf("internal/gentables/%s:%d: %s", file, line, fmt.Sprintf(format, args...))
	}
	recs, lines, err := rows(filepath.Join(dir, "errors.table"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	unique := func(names ...string) bool {
		for _, n := range names {
			if n != "" && seen[n] {
				return false
			}
		}
		for _, n := range names {
			seen[n] = true
		}
		return true
	}
	for i, f := range recs {
		if len(f) != 5 {
			return nil, bad("errors.table", lines[i], "want 5 fields, got %d", len(f))
		}
		n, err := strconv.Atoi(f[0])
		if err != nil || n != len(t.codes)+1 {
			return nil, bad("errors.table", lines[i], "number %q: want %d (numbers run from 1 without gaps)", f[0], len(t.codes)+1)
		}
		r := codeRow{Num: n, Macro: f[1], OpenFAM: f[2], Const: f[3], Msg: f[4]}
		if r.Const == "-" {
			r.Const = ""
		}
		if r.Msg == "-" {
			r.Msg = ""
		}
		switch {
		case !famErrRE.MatchString(r.Macro):
			return nil, bad("errors.table", lines[i], "macro %q is not FAM_E<NAME>", r.Macro)
		case !macroRE.MatchString(r.OpenFAM):
			return nil, bad("errors.table", lines[i], "OpenFAM name %q is not an upper-case C name", r.OpenFAM)
		case r.Const != "" && (!identRE.MatchString(r.Const) || !strings.HasPrefix(r.Const, "Code")):
			return nil, bad("errors.table", lines[i], "constant %q is not Code<Name>", r.Const)
		case (r.Const == "") != (r.Msg == ""):
			return nil, bad("errors.table", lines[i], "a constant needs a message and a message a constant")
		case strings.ContainsAny(r.Msg, "\"\\"):
			return nil, bad("errors.table", lines[i], "message %q has a quote or backslash", r.Msg)
		case !unique(r.Macro, r.OpenFAM, r.Const):
			return nil, bad("errors.table", lines[i], "a name of this row is used twice")
		}
		t.codes = append(t.codes, r)
	}
	if recs, lines, err = rows(filepath.Join(dir, "atomics.table")); err != nil {
		return nil, err
	}
	for i, f := range recs {
		switch {
		case f[0] == "kind" && len(f) == 5:
			n, err := strconv.Atoi(f[1])
			if err != nil || n != len(t.kinds)+1 {
				return nil, bad("atomics.table", lines[i], "kind number %q: want %d", f[1], len(t.kinds)+1)
			}
			r := kindRow{Num: n, Const: f[2], Enum: f[3], Suffix: f[4]}
			if !identRE.MatchString(r.Const) || !macroRE.MatchString(r.Enum) || !cnameRE.MatchString(r.Suffix) ||
				!unique("k:"+r.Const, r.Enum, "k:"+r.Suffix) {
				return nil, bad("atomics.table", lines[i], "malformed or repeated name")
			}
			t.kinds = append(t.kinds, r)
		case f[0] == "op" && len(f) == 6:
			n, err := strconv.Atoi(f[1])
			if err != nil || n != len(t.ops)+1 {
				return nil, bad("atomics.table", lines[i], "op number %q: want %d", f[1], len(t.ops)+1)
			}
			r := opRow{Num: n, Const: f[2], Enum: f[3], Name: f[4], Fetch: f[5]}
			if !identRE.MatchString(r.Const) || !macroRE.MatchString(r.Enum) || !cnameRE.MatchString(r.Name) ||
				!cnameRE.MatchString(r.Fetch) || !unique("o:"+r.Const, r.Enum, "o:"+r.Name) {
				return nil, bad("atomics.table", lines[i], "malformed or repeated name")
			}
			t.ops = append(t.ops, r)
		default:
			return nil, bad("atomics.table", lines[i], "want kind (5 fields) or op (6 fields)")
		}
	}
	if len(t.codes) == 0 || len(t.kinds) == 0 || len(t.ops) == 0 {
		return nil, errors.New("internal/gentables: a table is empty")
	}
	return t, nil
}

// ---- outputs ----------------------------------------------------------------

// output is one generated copy: a whole file (render ignores old) or the
// block between markers in a hand-written file.
type output struct {
	path   string
	whole  bool // the generator writes the whole file (it may be missing)
	render func(old []byte) ([]byte, error)
}

func outputs(t *tables) []output {
	return []output{
		{"core/errors_gen.go", true, goFile(t.coreErrors)},
		{"core/amo/names_gen.go", true, goFile(t.amoNames)},
		{"capi/tables_gen.go", true, goFile(t.capiChecks)},
		{"include/openfam.h", false, block("/* BEGIN GENERATED", "/* END GENERATED", t.openfamH)},
		{"include/fam/fam_exception.h", false, block("    /* BEGIN GENERATED", "    /* END GENERATED", t.famException)},
		{"bindings/python/openfam/_errors.py", false, block("    # BEGIN GENERATED", "    # END GENERATED", t.python)},
		{"bindings/chapel/OpenFAM.chpl", false, block("  // BEGIN GENERATED", "  // END GENERATED", t.chapel)},
	}
}

// banner is the first line of every wholly generated Go file.
const banner = "// Code generated by " + self + " from internal/gentables/%s; DO NOT EDIT.\n\n"

// goFile renders a whole Go file with gen and gofmt's it.
func goFile(gen func(*bytes.Buffer)) func([]byte) ([]byte, error) {
	return func([]byte) ([]byte, error) {
		var b bytes.Buffer
		gen(&b)
		return format.Source(b.Bytes())
	}
}

// block replaces the lines strictly between the line starting with begin
// and the next line starting with end; both markers must be present once.
func block(begin, end string, gen func(*bytes.Buffer)) func([]byte) ([]byte, error) {
	return func(old []byte) ([]byte, error) {
		lines := strings.SplitAfter(string(old), "\n")
		b, e := -1, -1
		for i, l := range lines {
			switch {
			case strings.HasPrefix(l, begin):
				if b >= 0 {
					return nil, fmt.Errorf("two %q lines", begin)
				}
				b = i
			case strings.HasPrefix(l, end) && b >= 0 && e < 0:
				e = i
			}
		}
		if b < 0 || e < 0 {
			return nil, fmt.Errorf("no %q ... %q block", begin, end)
		}
		var body bytes.Buffer
		gen(&body)
		var out bytes.Buffer
		out.WriteString(strings.Join(lines[:b+1], ""))
		out.Write(body.Bytes())
		out.WriteString(strings.Join(lines[e:], ""))
		return out.Bytes(), nil
	}
}

func (t *tables) coreErrors(b *bytes.Buffer) {
	fmt.Fprintf(b, banner, "errors.table")
	b.WriteString("package core\n\n")
	b.WriteString("// Codes used by this implementation (a subset of Fam_Error).\nconst (\n")
	for _, r := range t.codes {
		if r.Const != "" {
			fmt.Fprintf(b, "\t%s Code = %d // %s\n", r.Const, r.Num, r.Macro)
		}
	}
	b.WriteString(")\n\n// codeNames are the messages of Code.String.\nvar codeNames = map[Code]string{\n")
	for _, r := range t.codes {
		if r.Const != "" {
			fmt.Fprintf(b, "\t%s: %q,\n", r.Const, r.Msg)
		}
	}
	b.WriteString("}\n\n// macroNames are the FAM_E* macro names of include/openfam.h, by number:\n" +
		"// every OpenFAM Fam_Error value, not only the codes this library returns.\nvar macroNames = map[Code]string{\n")
	for _, r := range t.codes {
		fmt.Fprintf(b, "\t%d: %q,\n", r.Num, r.Macro)
	}
	b.WriteString("}\n")
}

func (t *tables) amoNames(b *bytes.Buffer) {
	fmt.Fprintf(b, banner, "atomics.table")
	b.WriteString("package amo\n\n")
	b.WriteString("// kindNames are the openfam.h type suffixes of the kinds (fam_add_int32).\nvar kindNames = [...]string{\n")
	for _, r := range t.kinds {
		fmt.Fprintf(b, "\t%s: %q,\n", r.Const, r.Suffix)
	}
	b.WriteString("}\n\n// opNames name the ops in openfam.h's non-fetching functions (fam_add_int32).\nvar opNames = [...]string{\n")
	for _, r := range t.ops {
		fmt.Fprintf(b, "\t%s: %q,\n", r.Const, r.Name)
	}
	b.WriteString("}\n\n// fetchOpNames name the ops in the fetching functions (fam_fetch_add_int32).\nvar fetchOpNames = [...]string{\n")
	for _, r := range t.ops {
		fmt.Fprintf(b, "\t%s: %q,\n", r.Const, r.Fetch)
	}
	b.WriteString("}\n\n// An \"invalid array index\" compile error here means a constant of types.go\n" +
		"// no longer has its number in internal/gentables/atomics.table.\nfunc _() {\n\tvar x [1]struct{}\n")
	for _, r := range t.kinds {
		fmt.Fprintf(b, "\t_ = x[%s-%d]\n", r.Const, r.Num)
	}
	for _, r := range t.ops {
		fmt.Fprintf(b, "\t_ = x[%s-%d]\n", r.Const, r.Num)
	}
	b.WriteString("}\n")
}

func (t *tables) capiChecks(b *bytes.Buffer) {
	fmt.Fprintf(b, banner, "errors.table and atomics.table")
	b.WriteString("package capi\n\n/*\n#include \"ofam.h\"\n*/\nimport \"C\"\n\n" +
		"import (\n\t\"github.com/gofam/openfam/core\"\n\t\"github.com/gofam/openfam/core/amo\"\n)\n\n" +
		"// The C layer passes error codes, kinds and operations to and from the core\n" +
		"// as plain numbers. Each line fails to compile (constant index out of range)\n" +
		"// if a C macro or enumerator and its Go counterpart ever differ.\nfunc _() {\n\tvar x [1]struct{}\n")
	for _, r := range t.codes {
		if r.Const != "" {
			fmt.Fprintf(b, "\t_ = x[C.%s-int(core.%s)]\n", r.Macro, r.Const)
		}
	}
	for _, r := range t.kinds {
		fmt.Fprintf(b, "\t_ = x[C.%s-int(amo.%s)]\n", r.Enum, r.Const)
	}
	for _, r := range t.ops {
		fmt.Fprintf(b, "\t_ = x[C.%s-int(amo.%s)]\n", r.Enum, r.Const)
	}
	b.WriteString("}\n")
}

func (t *tables) openfamH(b *bytes.Buffer) {
	for _, r := range t.codes {
		fmt.Fprintf(b, "#define %s %d\n", r.Macro, r.Num)
	}
}

func (t *tables) famException(b *bytes.Buffer) {
	for i, r := range t.codes {
		sep := ","
		if i == len(t.codes)-1 {
			sep = ""
		}
		fmt.Fprintf(b, "    %s = %d%s\n", r.OpenFAM, r.Num, sep)
	}
}

func (t *tables) python(b *bytes.Buffer) {
	for _, r := range t.codes {
		fmt.Fprintf(b, "    %q: %d,\n", r.Macro, r.Num)
	}
}

func (t *tables) chapel(b *bytes.Buffer) {
	for _, r := range t.codes {
		fmt.Fprintf(b, "  param %s = %d;\n", r.Macro, r.Num)
	}
}

// ---- prose checks -------------------------------------------------------------

// docChecks are the hand-written pages that quote error numbers.
var docChecks = []string{"docs/API.md", "docs/man/openfam.3.md"}

// docPairRE matches a macro followed by its number, as in "FAM_ENOTFOUND 8"
// or "FAM_ENOTFOUND (8)".
var docPairRE = regexp.MustCompile(`\b(FAM_E[A-Z0-9]+)\s+\(?(\d+)\b`)

// checkDoc returns one message per macro-number pair in the page that
// disagrees with the table (an unknown macro included).
func checkDoc(root, path string, t *tables) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	num := map[string]int{}
	for _, r := range t.codes {
		num[r.Macro] = r.Num
	}
	var msgs []string
	for _, m := range docPairRE.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[2])
		want, ok := num[m[1]]
		switch {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("%s: %s is not in errors.table", path, m[1]))
		case n != want:
			msgs = append(msgs, fmt.Sprintf("%s: says %s is %d, errors.table says %d", path, m[1], n, want))
		}
	}
	sort.Strings(msgs)
	return msgs, nil
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g := strings.Split(string(got), "\n")
	w := strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d is %q, the table makes it %q", i+1, gl, wl)
		}
	}
	return "differs"
}
