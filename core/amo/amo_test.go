package amo

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

// mapShared returns size bytes of a temp file mapped MAP_SHARED, the kind of
// memory Do works on in production.
func mapShared(tb testing.TB, size int) []byte {
	tb.Helper()
	f, err := os.Create(filepath.Join(tb.TempDir(), "region"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		tb.Fatal(err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Munmap(mem) })
	return mem
}

var kinds = []Kind{Int32, Int64, Uint32, Uint64, Float32, Float64, Int128}
var ops = []Op{Set, Fetch, Add, Subtract, Min, Max, And, Or, Xor, Swap, CompareSwap}

func kindName(k Kind) string {
	return [...]string{"?", "Int32", "Int64", "Uint32", "Uint64", "Float32", "Float64", "Int128"}[k]
}

func opName(op Op) string {
	return [...]string{"?", "Set", "Fetch", "Add", "Subtract", "Min", "Max", "And", "Or", "Xor", "Swap", "CompareSwap"}[op]
}

// load reads a word from mem at off with plain little-endian decoding, so
// checks do not depend on the code under test.
func load(mem []byte, off int, k Kind) Value {
	switch k.Size() {
	case 4:
		return Value{Lo: uint64(binary.LittleEndian.Uint32(mem[off:]))}
	case 8:
		return Value{Lo: binary.LittleEndian.Uint64(mem[off:])}
	}
	return Value{Lo: binary.LittleEndian.Uint64(mem[off:]), Hi: binary.LittleEndian.Uint64(mem[off+8:])}
}

func store(mem []byte, off int, k Kind, v Value) {
	switch k.Size() {
	case 4:
		binary.LittleEndian.PutUint32(mem[off:], uint32(v.Lo))
	case 8:
		binary.LittleEndian.PutUint64(mem[off:], v.Lo)
	default:
		binary.LittleEndian.PutUint64(mem[off:], v.Lo)
		binary.LittleEndian.PutUint64(mem[off+8:], v.Hi)
	}
}

// model computes the word after op with ordinary typed Go arithmetic.
func model(k Kind, op Op, w, v, cmp Value) Value {
	switch op {
	case Fetch:
		return w
	case Set, Swap:
		return v
	case CompareSwap:
		if w == cmp {
			return v
		}
		return w
	}
	switch k {
	case Int32:
		x, y := int32(w.Lo), int32(v.Lo)
		return Value{Lo: uint64(uint32(intOp(op, x, y)))}
	case Int64:
		return Value{Lo: uint64(intOp(op, int64(w.Lo), int64(v.Lo)))}
	case Uint32:
		return Value{Lo: uint64(intOp(op, uint32(w.Lo), uint32(v.Lo)))}
	case Uint64:
		return Value{Lo: intOp(op, w.Lo, v.Lo)}
	case Float32:
		x, y := math.Float32frombits(uint32(w.Lo)), math.Float32frombits(uint32(v.Lo))
		switch op {
		case Add:
			return Value{Lo: uint64(math.Float32bits(x + y))}
		case Subtract:
			return Value{Lo: uint64(math.Float32bits(x - y))}
		}
		if r := float32(modelMinMax(op, float64(x), float64(y))); math.Float32bits(r) == uint32(v.Lo) {
			return v
		}
		return w
	case Float64:
		x, y := math.Float64frombits(w.Lo), math.Float64frombits(v.Lo)
		switch op {
		case Add:
			return Value{Lo: math.Float64bits(x + y)}
		case Subtract:
			return Value{Lo: math.Float64bits(x - y)}
		}
		r := modelMinMax(op, x, y)
		if math.Float64bits(r) == v.Lo {
			return v
		}
		return w
	}
	panic("model: unexpected " + kindName(k) + " " + opName(op))
}

func intOp[T int32 | int64 | uint32 | uint64](op Op, x, y T) T {
	switch op {
	case Add:
		return x + y
	case Subtract:
		return x - y
	case Min:
		return min(x, y)
	case Max:
		return max(x, y)
	case And:
		return x & y
	case Or:
		return x | y
	case Xor:
		return x ^ y
	}
	panic("intOp: " + opName(op))
}

// modelMinMax is C fmin/fmax with -0 < +0, written independently of
// takeOperand: math.Min/Max already order signed zeros, only NaN differs.
func modelMinMax(op Op, x, y float64) float64 {
	if math.IsNaN(y) {
		return x
	}
	if math.IsNaN(x) {
		return y
	}
	if op == Min {
		return math.Min(x, y)
	}
	return math.Max(x, y)
}

func sampleValues(k Kind) []Value {
	switch k {
	case Int32, Uint32:
		var r []Value
		for _, x := range []int32{0, 1, -1, 7, -7, math.MaxInt32, math.MinInt32, 0x0f0f0f0f} {
			r = append(r, Value{Lo: uint64(uint32(x))})
		}
		return r
	case Int64, Uint64:
		var r []Value
		for _, x := range []int64{0, 1, -1, 7, -7, math.MaxInt64, math.MinInt64, 0x0f0f0f0f_f0f0f0f0} {
			r = append(r, Value{Lo: uint64(x)})
		}
		return r
	case Float32:
		var r []Value
		for _, x := range []float32{0, float32(math.Copysign(0, -1)), 1.5, -2.25, 1e30, float32(math.Inf(1)), float32(math.NaN())} {
			r = append(r, Value{Lo: uint64(math.Float32bits(x))})
		}
		return r
	case Float64:
		var r []Value
		for _, x := range []float64{0, math.Copysign(0, -1), 1.5, -2.25, 1e300, math.Inf(-1), math.NaN()} {
			r = append(r, Value{Lo: math.Float64bits(x)})
		}
		return r
	}
	return []Value{{}, {Lo: 1}, {Hi: 1}, {Lo: math.MaxUint64, Hi: math.MaxUint64}, {Lo: 0x0123456789abcdef, Hi: 0xfedcba9876543210}}
}

// TestMatrix runs every valid (kind, op) pair over sample words and operands
// and compares the result and the memory with the model. The word sits
// between canary bytes, which must stay untouched.
func TestMatrix(t *testing.T) {
	mem := mapShared(t, 4096)
	const off = 64
	n := 0
	for _, k := range kinds {
		for _, op := range ops {
			if !Valid(k, op) {
				continue
			}
			vals := sampleValues(k)
			for _, w := range vals {
				for _, v := range vals {
					cmps := []Value{vals[1]}
					if op == CompareSwap {
						cmps = []Value{w, vals[1]}
					}
					for _, cmp := range cmps {
						for i := range mem[:off+32] {
							mem[i] = 0xa5
						}
						store(mem, off, k, w)
						old, err := Do(unsafe.Pointer(&mem[off]), k, op, v, cmp)
						if err != nil {
							t.Fatalf("%s %s: %v", kindName(k), opName(op), err)
						}
						if old != w {
							t.Errorf("%s %s w=%x v=%x: old=%x", kindName(k), opName(op), w, v, old)
						}
						want := model(k, op, w, v, cmp)
						if got := load(mem, off, k); got != want {
							t.Errorf("%s %s w=%x v=%x cmp=%x: word=%x want %x", kindName(k), opName(op), w, v, cmp, got, want)
						}
						for i := range off + 32 {
							if (i < off || i >= off+int(k.Size())) && mem[i] != 0xa5 {
								t.Fatalf("%s %s wrote byte %d outside the word", kindName(k), opName(op), i)
							}
						}
						n++
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d cases ran", n)
	}
}

func TestValidMatrix(t *testing.T) {
	// Spot checks of OpenFAM 3.2's matrix that the rest of the package relies on.
	for _, c := range []struct {
		k  Kind
		op Op
		ok bool
	}{
		{Int64, Add, true}, {Float64, Add, true}, {Int128, Add, false},
		{Uint64, Xor, true}, {Int64, And, false}, {Float32, Or, false},
		{Float64, CompareSwap, false}, {Int128, CompareSwap, true}, {Int128, Fetch, true},
		{Int128, Swap, false}, {Float32, Swap, true}, {0, Fetch, false}, {Int32, 0, false},
	} {
		if Valid(c.k, c.op) != c.ok {
			t.Errorf("Valid(%d, %d) = %v", c.k, c.op, !c.ok)
		}
	}
}

func TestInvalidOp(t *testing.T) {
	mem := mapShared(t, 4096)
	store(mem, 0, Int128, Value{Lo: 42, Hi: 43})
	allKinds := append([]Kind{0, 8}, kinds...)
	allOps := append([]Op{0, 12}, ops...)
	for _, k := range allKinds {
		for _, op := range allOps {
			if Valid(k, op) {
				continue
			}
			old, err := Do(unsafe.Pointer(&mem[0]), k, op, Value{Lo: 1, Hi: 1}, Value{Lo: 42, Hi: 43})
			if !errors.Is(err, ErrInvalidOp) || old != (Value{}) {
				t.Errorf("Do(%d, %d) = %v, %v; want ErrInvalidOp", k, op, old, err)
			}
			if got := load(mem, 0, Int128); got != (Value{Lo: 42, Hi: 43}) {
				t.Fatalf("Do(%d, %d) changed memory to %x", k, op, got)
			}
		}
	}
}

func TestMisaligned(t *testing.T) {
	mem := mapShared(t, 4096)
	for _, k := range kinds {
		for off := 1; off < int(k.Size()); off++ {
			for _, op := range []Op{Fetch, Set} {
				_, err := Do(unsafe.Pointer(&mem[64+off]), k, op, Value{Lo: 1}, Value{})
				if !errors.Is(err, ErrMisaligned) {
					t.Errorf("%s %s at +%d: err=%v, want ErrMisaligned", kindName(k), opName(op), off, err)
				}
			}
		}
	}
	for i, b := range mem {
		if b != 0 {
			t.Fatalf("misaligned call wrote byte %d", i)
		}
	}
	// Validity is checked before alignment.
	if _, err := Do(unsafe.Pointer(&mem[1]), Float64, And, Value{}, Value{}); !errors.Is(err, ErrInvalidOp) {
		t.Errorf("invalid and misaligned: err=%v, want ErrInvalidOp", err)
	}
}

func TestFloatMinMaxSpecial(t *testing.T) {
	mem := mapShared(t, 4096)
	p := unsafe.Pointer(&mem[0])
	nan := math.NaN()
	negz := math.Copysign(0, -1)
	for _, c := range []struct {
		op       Op
		word, v  float64
		want     float64
		wantNaN  bool
		wantNegZ bool // want is -0
	}{
		{op: Min, word: nan, v: 3, want: 3},
		{op: Min, word: 3, v: nan, want: 3},
		{op: Max, word: nan, v: -3, want: -3},
		{op: Max, word: -3, v: nan, want: -3},
		{op: Min, word: nan, v: nan, wantNaN: true},
		{op: Max, word: nan, v: nan, wantNaN: true},
		{op: Min, word: 0, v: negz, want: 0, wantNegZ: true},
		{op: Min, word: negz, v: 0, want: 0, wantNegZ: true},
		{op: Max, word: negz, v: 0, want: 0},
		{op: Max, word: 0, v: negz, want: 0},
		{op: Min, word: math.Inf(1), v: -0.5, want: -0.5},
		{op: Max, word: math.Inf(-1), v: 5, want: 5},
	} {
		for _, k := range []Kind{Float64, Float32} {
			bits := func(f float64) Value {
				if k == Float32 {
					return Value{Lo: uint64(math.Float32bits(float32(f)))}
				}
				return Value{Lo: math.Float64bits(f)}
			}
			get := func() float64 {
				if k == Float32 {
					return float64(math.Float32frombits(binary.LittleEndian.Uint32(mem)))
				}
				return math.Float64frombits(binary.LittleEndian.Uint64(mem))
			}
			store(mem, 0, Float64, Value{})
			store(mem, 0, k, bits(c.word))
			old, err := Do(p, k, c.op, bits(c.v), Value{})
			if err != nil || old != bits(c.word) {
				t.Fatalf("%s %s(%v, %v): old=%x err=%v", kindName(k), opName(c.op), c.word, c.v, old, err)
			}
			got := get()
			switch {
			case c.wantNaN:
				if !math.IsNaN(got) {
					t.Errorf("%s %s(%v, %v) = %v, want NaN", kindName(k), opName(c.op), c.word, c.v, got)
				}
			case got != c.want, got == 0 && math.Signbit(got) != c.wantNegZ:
				t.Errorf("%s %s(%v, %v) = %v, want %v (negative zero %v)", kindName(k), opName(c.op), c.word, c.v, got, c.want, c.wantNegZ)
			}
		}
	}
}

func TestCAS128(t *testing.T) {
	mem := mapShared(t, 4096)
	p := unsafe.Pointer(&mem[32])
	cur := Value{Lo: 0x1111, Hi: 0x2222}
	store(mem, 32, Int128, cur)

	// Failure when only the high half differs, then only the low half.
	for _, cmp := range []Value{{Lo: 0x1111, Hi: 0x2223}, {Lo: 0x1112, Hi: 0x2222}} {
		old, err := Do(p, Int128, CompareSwap, Value{Lo: 9, Hi: 9}, cmp)
		if err != nil || old != cur {
			t.Fatalf("failed CAS returned %x, %v; want %x", old, err, cur)
		}
		if got := load(mem, 32, Int128); got != cur {
			t.Fatalf("failed CAS changed word to %x", got)
		}
	}
	nw := Value{Lo: math.MaxUint64, Hi: 0x8000000000000000}
	old, err := Do(p, Int128, CompareSwap, nw, cur)
	if err != nil || old != cur {
		t.Fatalf("CAS returned %x, %v; want %x", old, err, cur)
	}
	if got := load(mem, 32, Int128); got != nw {
		t.Fatalf("CAS stored %x, want %x", got, nw)
	}
	if old, _ := Do(p, Int128, Fetch, Value{}, Value{}); old != nw {
		t.Fatalf("Fetch = %x, want %x", old, nw)
	}
	if got := load(mem, 32, Int128); got != nw {
		t.Fatalf("Fetch changed word to %x", got)
	}
	// Neighbours of the 16-byte word stay untouched.
	for i := range 32 {
		if mem[i] != 0 || mem[48+i] != 0 {
			t.Fatalf("128-bit ops wrote outside the word")
		}
	}
}

func TestConcurrentAdd(t *testing.T) {
	const workers, iters = 8, 10000
	mem := mapShared(t, 4096)
	ip, fp := unsafe.Pointer(&mem[0]), unsafe.Pointer(&mem[8])
	one := Value{Lo: math.Float64bits(1)}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range iters {
				if _, err := Do(ip, Int64, Add, Value{Lo: 3}, Value{}); err != nil {
					t.Error(err)
					return
				}
				if _, err := Do(fp, Float64, Add, one, Value{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := int64(binary.LittleEndian.Uint64(mem)); got != 3*workers*iters {
		t.Errorf("Int64 total %d, want %d", got, 3*workers*iters)
	}
	if got := math.Float64frombits(binary.LittleEndian.Uint64(mem[8:])); got != workers*iters {
		t.Errorf("Float64 total %v, want %d", got, workers*iters)
	}
}

// TestConcurrentCAS128 increments a 128-bit counter whose low half wraps
// often (it starts near 2^64), so a torn read or a lost update shows up in
// either half.
func TestConcurrentCAS128(t *testing.T) {
	const workers, iters = 8, 10000
	mem := mapShared(t, 4096)
	p := unsafe.Pointer(&mem[16])
	start := Value{Lo: math.MaxUint64 - 1000}
	store(mem, 16, Int128, start)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range iters {
				cur, _ := Do(p, Int128, Fetch, Value{}, Value{})
				for {
					next := Value{Lo: cur.Lo + 1, Hi: cur.Hi}
					if next.Lo == 0 {
						next.Hi++
					}
					old, err := Do(p, Int128, CompareSwap, next, cur)
					if err != nil {
						t.Error(err)
						return
					}
					if old == cur {
						break
					}
					cur = old
				}
			}
		})
	}
	wg.Wait()
	want := Value{Lo: start.Lo + workers*iters, Hi: 1}
	if got := load(mem, 16, Int128); got != want {
		t.Errorf("counter = %x, want %x", got, want)
	}
	// Set returns the previous word and stores the new one.
	if old, _ := Do(p, Int128, Set, Value{Lo: 5, Hi: 6}, Value{}); old != want {
		t.Errorf("Set returned %x, want %x", old, want)
	}
	if got := load(mem, 16, Int128); got != (Value{Lo: 5, Hi: 6}) {
		t.Errorf("after Set word = %x", got)
	}
}

func BenchmarkFetchAddInt64(b *testing.B) {
	mem := mapShared(b, 4096)
	p := unsafe.Pointer(&mem[0])
	for b.Loop() {
		Do(p, Int64, Add, Value{Lo: 1}, Value{})
	}
	if got := binary.LittleEndian.Uint64(mem); got != uint64(b.N) {
		b.Fatalf("total %d, want %d", got, b.N)
	}
}
