package features

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/gofam/openfam/core/amo"
)

// famCodes maps the FAM_E* names scenarios use to their numbers (openfam.h).
var famCodes = map[string]int{
	"FAM_EUNKNOWN": 1, "FAM_ENOPERM": 2, "FAM_ETIMEOUT": 3, "FAM_EINVAL": 4, "FAM_ENOTFOUND": 8,
	"FAM_EEXIST": 9, "FAM_ERPC": 11, "FAM_ERANGE": 13, "FAM_ENOSPACE": 14, "FAM_EUNIMPL": 16,
	"FAM_ERESOURCE": 17, "FAM_ENAMETOOLONG": 23, "FAM_EBACKUPNOTFOUND": 29,
}

var kinds = map[string]amo.Kind{"int32": amo.Int32, "int64": amo.Int64, "uint32": amo.Uint32,
	"uint64": amo.Uint64, "float": amo.Float32, "double": amo.Float64, "int128": amo.Int128}

// atomicOps maps an operation as scenarios name it (the openfam.h function
// name without fam_ and the type) to the operation and whether it fetches.
var atomicOps = map[string]struct {
	op    amo.Op
	fetch bool
}{
	"set": {amo.Set, false}, "add": {amo.Add, false}, "subtract": {amo.Subtract, false},
	"min": {amo.Min, false}, "max": {amo.Max, false}, "and": {amo.And, false},
	"or": {amo.Or, false}, "xor": {amo.Xor, false},
	"fetch_add": {amo.Add, true}, "fetch_subtract": {amo.Subtract, true}, "fetch_min": {amo.Min, true},
	"fetch_max": {amo.Max, true}, "fetch_and": {amo.And, true}, "fetch_or": {amo.Or, true},
	"fetch_xor": {amo.Xor, true}, "swap": {amo.Swap, true},
}

// parseValue reads a scenario's number as the raw bits of a k operand:
// decimal or 0x hex integers, and for floats anything strconv accepts
// (NaN, -0, inf).
func parseValue(k amo.Kind, s string) (amo.Value, error) {
	switch k {
	case amo.Float32:
		f, err := strconv.ParseFloat(s, 32)
		return amo.Value{Lo: uint64(math.Float32bits(float32(f)))}, err
	case amo.Float64:
		f, err := strconv.ParseFloat(s, 64)
		return amo.Value{Lo: math.Float64bits(f)}, err
	case amo.Int128:
		n, ok := new(big.Int).SetString(s, 0)
		if !ok {
			return amo.Value{}, fmt.Errorf("bad int128 %q", s)
		}
		if n.Sign() < 0 {
			n.Add(n, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		lo := new(big.Int).And(n, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
		hi := new(big.Int).Rsh(n, 64).Uint64()
		return amo.Value{Lo: lo, Hi: hi}, nil
	case amo.Int32, amo.Int64:
		n, err := strconv.ParseInt(s, 0, int(k.Size()*8))
		if k == amo.Int32 {
			return amo.Value{Lo: uint64(uint32(int32(n)))}, err
		}
		return amo.Value{Lo: uint64(n)}, err
	default:
		n, err := strconv.ParseUint(s, 0, int(k.Size()*8))
		return amo.Value{Lo: n}, err
	}
}

// formatValue writes the bits of a k operand canonically, so that "1.50"
// and "1.5", or "-0" and "-0.0", compare equal while -0 and 0 do not.
func formatValue(k amo.Kind, v amo.Value) string {
	switch k {
	case amo.Float32:
		return strconv.FormatFloat(float64(math.Float32frombits(uint32(v.Lo))), 'g', -1, 32)
	case amo.Float64:
		return strconv.FormatFloat(math.Float64frombits(v.Lo), 'g', -1, 64)
	case amo.Int128:
		n := new(big.Int).Lsh(new(big.Int).SetUint64(v.Hi), 64)
		n.Or(n, new(big.Int).SetUint64(v.Lo))
		if v.Hi>>63 == 1 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return n.String()
	case amo.Int32:
		return strconv.FormatInt(int64(int32(uint32(v.Lo))), 10)
	case amo.Int64:
		return strconv.FormatInt(int64(v.Lo), 10)
	case amo.Uint32:
		return strconv.FormatUint(uint64(uint32(v.Lo)), 10)
	}
	return strconv.FormatUint(v.Lo, 10)
}

// canonical parses and re-formats s as a k value.
func canonical(k amo.Kind, s string) (string, error) {
	v, err := parseValue(k, s)
	if err != nil {
		return "", err
	}
	return formatValue(k, v), nil
}

// encode lays v out as the k-sized little-endian word it is in memory.
func encode(k amo.Kind, v amo.Value) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, v.Lo)
	binary.LittleEndian.PutUint64(b[8:], v.Hi)
	return b[:k.Size()]
}

// decode is the inverse of encode.
func decode(k amo.Kind, b []byte) amo.Value {
	var w [16]byte
	copy(w[:], b[:k.Size()])
	return amo.Value{Lo: binary.LittleEndian.Uint64(w[:]), Hi: binary.LittleEndian.Uint64(w[8:])}
}

// parseSize reads "4096", "64 KiB" or "1 MiB".
func parseSize(n, unit string) (uint64, error) {
	v, err := strconv.ParseUint(n, 10, 64)
	switch unit {
	case "KiB":
		v <<= 10
	case "MiB":
		v <<= 20
	}
	return v, err
}

// parseSizeMode reads a step's size (number and unit) and octal mode.
func parseSizeMode(n, unit, mode string) (uint64, uint32, error) {
	size, err := parseSize(n, unit)
	if err != nil {
		return 0, 0, err
	}
	m, err := parseMode(mode)
	return size, m, err
}

// parseMode reads an octal mode such as 0600.
func parseMode(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	return uint32(v), err
}

// parseList reads "3, 0, 2".
func parseList(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
