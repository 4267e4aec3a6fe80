package amo

import "testing"

func TestFuncName(t *testing.T) {
	for _, c := range []struct {
		k     Kind
		op    Op
		fetch bool
		want  string
	}{
		{Int32, Set, false, "fam_set_int32"},
		{Int64, Add, false, "fam_add_int64"},
		{Int64, Add, true, "fam_fetch_add_int64"},
		{Uint64, Xor, true, "fam_fetch_xor_uint64"},
		{Float32, Min, false, "fam_min_float"},
		{Float64, Max, true, "fam_fetch_max_double"},
		{Int128, Fetch, true, "fam_fetch_int128"},
		{Int128, Fetch, false, "fam_fetch_int128"},
		{Uint32, Swap, true, "fam_swap_uint32"},
		{Int128, CompareSwap, true, "fam_compare_swap_int128"},
		{Float64, And, false, "fam_and_double"}, // named although not Valid
		{0, Add, false, ""},
		{Int32, 0, false, ""},
		{Int128 + 1, Add, false, ""},
		{Int32, CompareSwap + 1, true, ""},
		{255, 255, true, ""},
	} {
		if got := FuncName(c.k, c.op, c.fetch); got != c.want {
			t.Errorf("FuncName(%d, %d, %v) = %q, want %q", c.k, c.op, c.fetch, got, c.want)
		}
	}
}
