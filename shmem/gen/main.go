// Command gen renders the OpenSHMEM layer's typed routines from one type
// table (the tables of OpenSHMEM 1.5) through the text/template files in
// shmem/gen/templates. Each template names its output file in a block
// {{define "output"}}path{{end}} (relative to the repository root), so new
// templates (typed collectives, reductions) need no change here.
//
//	go run ./shmem/gen            writes the outputs in the repository
//	go run ./shmem/gen -o DIR     writes them under DIR instead (make verify-shmem)
package main

import (
	"bytes"
	"embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

//go:embed templates/*.tmpl
var templates embed.FS

// Type is one C type of the tables: its C spelling, the TYPENAME of the
// routine names, and its size in bytes on LP64.
type Type struct {
	C    string
	Name string
	Size int
	// Float marks floating-point types (no bitwise ops; bit-cast atomics).
	Float bool
	// Alias marks typedefs of another type (int32_t is int on LP64), and
	// Of names that type: in a C11 _Generic association list, where a
	// type may appear only once, an alias stands in for its type only
	// when the list lacks that type (the bitwise AMO table has int32_t
	// and int64_t but not int and long).
	Alias bool
	Of    string
}

// Bits is the operand width of the type's atomics.
func (t Type) Bits() int { return t.Size * 8 }

func ty(c, name string, size int) Type { return Type{C: c, Name: name, Size: size} }
func fl(c, name string, size int) Type { return Type{C: c, Name: name, Size: size, Float: true} }
func al(c, name string, size int, of string) Type {
	return Type{C: c, Name: name, Size: size, Alias: true, Of: of}
}

// Generic is one C11 generic routine: shmem_<Op>(Params) dispatching on
// the type of *Params[On] over Types; Ctx adds the form with a leading
// shmem_ctx_t (shmem_ctx_<type>_<op>), chosen by the argument count.
type Generic struct {
	Op     string
	Params []string
	On     int
	Types  []Type
	Ctx    bool
}

// Generics lists the C11 generic routines of OpenSHMEM 1.5.
func (t Tables) Generics() []Generic {
	var g []Generic
	add := func(op string, types []Type, ctx bool, on int, params ...string) {
		g = append(g, Generic{Op: op, Params: params, On: on, Types: types, Ctx: ctx})
	}
	for _, op := range []string{"put", "get", "put_nbi", "get_nbi"} {
		add(op, t.RMA, true, 0, "dest", "source", "nelems", "pe")
	}
	add("p", t.RMA, true, 0, "dest", "value", "pe")
	add("g", t.RMA, true, 0, "source", "pe")
	add("iput", t.RMA, true, 0, "dest", "source", "dst", "sst", "nelems", "pe")
	add("iget", t.RMA, true, 0, "dest", "source", "dst", "sst", "nelems", "pe")
	add("put_signal", t.RMA, true, 0, "dest", "source", "nelems", "sig_addr", "signal", "sig_op", "pe")
	add("put_signal_nbi", t.RMA, true, 0, "dest", "source", "nelems", "sig_addr", "signal", "sig_op", "pe")
	add("atomic_fetch", t.ExtAMO, true, 0, "source", "pe")
	add("atomic_set", t.ExtAMO, true, 0, "dest", "value", "pe")
	add("atomic_swap", t.ExtAMO, true, 0, "dest", "value", "pe")
	add("atomic_fetch_nbi", t.ExtAMO, true, 0, "fetch", "source", "pe")
	add("atomic_swap_nbi", t.ExtAMO, true, 0, "fetch", "dest", "value", "pe")
	add("atomic_compare_swap", t.AMO, true, 0, "dest", "cond", "value", "pe")
	add("atomic_fetch_inc", t.AMO, true, 0, "dest", "pe")
	add("atomic_inc", t.AMO, true, 0, "dest", "pe")
	add("atomic_fetch_add", t.AMO, true, 0, "dest", "value", "pe")
	add("atomic_add", t.AMO, true, 0, "dest", "value", "pe")
	add("atomic_compare_swap_nbi", t.AMO, true, 0, "fetch", "dest", "cond", "value", "pe")
	add("atomic_fetch_inc_nbi", t.AMO, true, 0, "fetch", "dest", "pe")
	add("atomic_fetch_add_nbi", t.AMO, true, 0, "fetch", "dest", "value", "pe")
	for _, op := range t.BitwiseOps {
		add("atomic_fetch_"+op, t.BitAMO, true, 0, "dest", "value", "pe")
		add("atomic_"+op, t.BitAMO, true, 0, "dest", "value", "pe")
		add("atomic_fetch_"+op+"_nbi", t.BitAMO, true, 0, "fetch", "dest", "value", "pe")
	}
	add("wait_until", t.Wait, false, 0, "ivar", "cmp", "cmp_value")
	add("test", t.Wait, false, 0, "ivar", "cmp", "cmp_value")
	for _, op := range []string{"all", "any"} {
		add("wait_until_"+op, t.Wait, false, 0, "ivars", "nelems", "status", "cmp", "cmp_value")
		add("test_"+op, t.Wait, false, 0, "ivars", "nelems", "status", "cmp", "cmp_value")
		add("wait_until_"+op+"_vector", t.Wait, false, 0, "ivars", "nelems", "status", "cmp", "cmp_values")
		add("test_"+op+"_vector", t.Wait, false, 0, "ivars", "nelems", "status", "cmp", "cmp_values")
	}
	add("wait_until_some", t.Wait, false, 0, "ivars", "nelems", "indices", "status", "cmp", "cmp_value")
	add("test_some", t.Wait, false, 0, "ivars", "nelems", "indices", "status", "cmp", "cmp_value")
	add("wait_until_some_vector", t.Wait, false, 0, "ivars", "nelems", "indices", "status", "cmp", "cmp_values")
	add("test_some_vector", t.Wait, false, 0, "ivars", "nelems", "indices", "status", "cmp", "cmp_values")
	return g
}

// Macro renders g as C preprocessor definitions: the plain form, the
// context form, and shmem_<op>(...) choosing between them by the number
// of arguments (SHMEMI_PICK<n>, defined by the template).
func (g Generic) Macro() string {
	ps := strings.Join(g.Params, ", ")
	on := g.Params[g.On]
	var b strings.Builder
	plain := "shmemi_g_" + g.Op
	if !g.Ctx {
		plain = "shmem_" + g.Op
	}
	fmt.Fprintf(&b, "#define %s(%s) _Generic(*(%s), %s)(%s)\n", plain, ps, on, assoc(g.Types, g.Op), ps)
	if !g.Ctx {
		return b.String()
	}
	var ctxAssoc []string
	for _, t := range selected(g.Types) {
		ctxAssoc = append(ctxAssoc, t.C+": shmem_ctx_"+t.Name+"_"+g.Op)
	}
	fmt.Fprintf(&b, "#define shmemi_g_ctx_%s(ctx, %s) _Generic(*(%s), %s)(ctx, %s)\n", g.Op, ps, on,
		strings.Join(ctxAssoc, ", "), ps)
	fmt.Fprintf(&b, "#define shmem_%s(...) SHMEMI_PICK%d(__VA_ARGS__, shmemi_g_ctx_%s, shmemi_g_%s, _)(__VA_ARGS__)\n",
		g.Op, len(g.Params), g.Op, g.Op)
	return b.String()
}

// selected is the types of a _Generic association list: every type that
// is not an alias, and the first alias of each type the list lacks.
func selected(types []Type) []Type {
	have := map[string]bool{}
	for _, t := range types {
		if !t.Alias {
			have[t.C] = true
		}
	}
	var out []Type
	for _, t := range types {
		if t.Alias {
			if have[t.Of] {
				continue
			}
			have[t.Of] = true
		}
		out = append(out, t)
	}
	return out
}

// assoc renders a _Generic association list "T: shmem_<name>_<suffix>, ..."
// over selected(types).
func assoc(types []Type, suffix string) string {
	var b []string
	for _, t := range selected(types) {
		b = append(b, t.C+": shmem_"+t.Name+"_"+suffix)
	}
	return strings.Join(b, ", ")
}

var (
	tFloat      = fl("float", "float", 4)
	tDouble     = fl("double", "double", 8)
	tLongDouble = fl("long double", "longdouble", 16)
	tChar       = ty("char", "char", 1)
	tSChar      = ty("signed char", "schar", 1)
	tShort      = ty("short", "short", 2)
	tInt        = ty("int", "int", 4)
	tLong       = ty("long", "long", 8)
	tLongLong   = ty("long long", "longlong", 8)
	tUChar      = ty("unsigned char", "uchar", 1)
	tUShort     = ty("unsigned short", "ushort", 2)
	tUInt       = ty("unsigned int", "uint", 4)
	tULong      = ty("unsigned long", "ulong", 8)
	tULongLong  = ty("unsigned long long", "ulonglong", 8)
	tInt8       = al("int8_t", "int8", 1, "signed char")
	tInt16      = al("int16_t", "int16", 2, "short")
	tInt32      = al("int32_t", "int32", 4, "int")
	tInt64      = al("int64_t", "int64", 8, "long")
	tUInt8      = al("uint8_t", "uint8", 1, "unsigned char")
	tUInt16     = al("uint16_t", "uint16", 2, "unsigned short")
	tUInt32     = al("uint32_t", "uint32", 4, "unsigned int")
	tUInt64     = al("uint64_t", "uint64", 8, "unsigned long")
	tSize       = al("size_t", "size", 8, "unsigned long")
	tPtrdiff    = al("ptrdiff_t", "ptrdiff", 8, "long")
	tComplexF   = fl("float _Complex", "complexf", 8)
	tComplexD   = fl("double _Complex", "complexd", 16)
)

// Sized is one entry of the sized RMA routines (shmem_put32 ...).
type Sized struct {
	Bits  int
	Bytes int
}

// Tables is what every template gets: the OpenSHMEM 1.5 type tables.
type Tables struct {
	// RMA: standard RMA types (Table 5).
	RMA []Type
	// Sized: shmem_put8 .. shmem_put128 (mem is written by hand).
	Sized []Sized
	// AMO: standard AMO types (Table 6: inc, add, compare_swap ...).
	AMO []Type
	// ExtAMO: extended AMO types (Table 7: fetch, set, swap).
	ExtAMO []Type
	// BitAMO: bitwise AMO types (Table 8: and, or, xor).
	BitAMO []Type
	// Wait: point-to-point synchronization types (Table 10).
	Wait []Type
	// Deprecated atomic names (shmem_int_fadd ...): the types they exist for.
	DeprAMO, DeprExtAMO []Type
	// Reduction types per operator class (Table 11).
	ReduceBitwise, ReduceMinMax, ReduceArith []Type
	// Reduction operators by class.
	BitwiseOps, MinMaxOps, ArithOps []string
}

func tables() Tables {
	std := []Type{tInt, tLong, tLongLong, tUInt, tULong, tULongLong, tInt32, tInt64, tUInt32, tUInt64, tSize, tPtrdiff}
	return Tables{
		RMA: []Type{tFloat, tDouble, tLongDouble, tChar, tSChar, tShort, tInt, tLong, tLongLong, tUChar, tUShort,
			tUInt, tULong, tULongLong, tInt8, tInt16, tInt32, tInt64, tUInt8, tUInt16, tUInt32, tUInt64, tSize, tPtrdiff},
		Sized:      []Sized{{8, 1}, {16, 2}, {32, 4}, {64, 8}, {128, 16}},
		AMO:        std,
		ExtAMO:     append([]Type{tFloat, tDouble}, std...),
		BitAMO:     []Type{tUInt, tULong, tULongLong, tInt32, tInt64, tUInt32, tUInt64},
		Wait:       []Type{tShort, tInt, tLong, tLongLong, tUShort, tUInt, tULong, tULongLong, tInt32, tInt64, tUInt32, tUInt64, tSize, tPtrdiff},
		DeprAMO:    []Type{tInt, tLong, tLongLong},
		DeprExtAMO: []Type{tFloat, tDouble, tInt, tLong, tLongLong},
		ReduceBitwise: []Type{tUChar, tUShort, tUInt, tULong, tULongLong, tInt8, tInt16, tInt32, tInt64, tUInt8,
			tUInt16, tUInt32, tUInt64, tSize},
		ReduceMinMax: []Type{tChar, tSChar, tShort, tInt, tLong, tLongLong, tPtrdiff, tUChar, tUShort, tUInt, tULong,
			tULongLong, tInt8, tInt16, tInt32, tInt64, tUInt8, tUInt16, tUInt32, tUInt64, tSize, tFloat, tDouble, tLongDouble},
		ReduceArith: []Type{tChar, tSChar, tShort, tInt, tLong, tLongLong, tPtrdiff, tUChar, tUShort, tUInt, tULong,
			tULongLong, tInt8, tInt16, tInt32, tInt64, tUInt8, tUInt16, tUInt32, tUInt64, tSize, tFloat, tDouble,
			tLongDouble, tComplexF, tComplexD},
		BitwiseOps: []string{"and", "or", "xor"},
		MinMaxOps:  []string{"max", "min"},
		ArithOps:   []string{"sum", "prod"},
	}
}

const banner = "Code generated by go run ./shmem/gen from shmem/gen/templates/%s; DO NOT EDIT."

func main() {
	out := flag.String("o", ".", "directory the output paths are relative to")
	flag.Parse()
	names, err := templates.ReadDir("templates")
	if err != nil {
		fail(err)
	}
	var list []string
	for _, n := range names {
		list = append(list, n.Name())
	}
	sort.Strings(list)
	data := tables()
	for _, name := range list {
		src, err := templates.ReadFile("templates/" + name)
		if err != nil {
			fail(err)
		}
		t, err := template.New(name).Funcs(template.FuncMap{
			"banner": func() string { return fmt.Sprintf(banner, name) },
			"upper":  strings.ToUpper,
			"assoc":  assoc,
		}).Parse(string(src))
		if err != nil {
			fail(err)
		}
		var path, body bytes.Buffer
		if t.Lookup("output") == nil {
			fail(fmt.Errorf("%s: no {{define \"output\"}} block naming its output file", name))
		}
		if err := t.ExecuteTemplate(&path, "output", data); err != nil {
			fail(err)
		}
		if err := t.Execute(&body, data); err != nil {
			fail(err)
		}
		dst := filepath.Join(*out, strings.TrimSpace(path.String()))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			fail(err)
		}
		if err := os.WriteFile(dst, bytes.TrimLeft(body.Bytes(), "\n"), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "shmem/gen:", err)
	os.Exit(1)
}
