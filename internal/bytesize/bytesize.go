// Package bytesize reads the byte counts the command-line tools accept:
// a number with an optional binary suffix.
package bytesize

import (
	"errors"
	"strconv"
	"strings"
)

// ErrSyntax is returned for anything that is not a positive byte count.
var ErrSyntax = errors.New("want a positive number of bytes, optionally with K, M, G or T (KiB, MB, ... also accepted; all powers of 1024)")

// Parse reads s as a positive byte count: digits, then optionally K, M, G
// or T, each optionally followed by "iB" or "B", case-insensitive, all
// powers of 1024. It fails with ErrSyntax on anything else, zero, or a
// value that overflows 64 bits.
func Parse(s string) (uint64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift != 0 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || v == 0 || v > (^uint64(0))>>shift {
		return 0, ErrSyntax
	}
	return v << shift, nil
}
