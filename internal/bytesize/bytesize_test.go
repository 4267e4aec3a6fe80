package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]uint64{"1": 1, "4096": 4096, "64K": 64 << 10, "64KiB": 64 << 10, "1m": 1 << 20,
		" 2MB ": 2 << 20, "3G": 3 << 30, "1TiB": 1 << 40} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "K", "-1", "1.5M", "1X", "16777216T", "12KK"} {
		if v, err := Parse(in); err != ErrSyntax {
			t.Errorf("Parse(%q) = %d, %v; want ErrSyntax", in, v, err)
		}
	}
}
