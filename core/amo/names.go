package amo

// funcNames holds the openfam.h function name of every (op, kind, fetching)
// triple, built once from the tables of names_gen.go so that naming an
// atomic in an error message formats nothing on the data path.
var funcNames = func() (t [len(opNames)][len(kindNames)][2]string) {
	for op := range opNames {
		for k := range kindNames {
			if opNames[op] == "" || kindNames[k] == "" {
				continue
			}
			t[op][k][0] = "fam_" + opNames[op] + "_" + kindNames[k]
			t[op][k][1] = "fam_" + fetchOpNames[op] + "_" + kindNames[k]
		}
	}
	return t
}()

// FuncName returns the openfam.h function that performs op on kind k, e.g.
// "fam_add_int64", or with fetch (the caller reads the previous value)
// "fam_fetch_add_int64". Ops that always return the previous value (Fetch,
// Swap, CompareSwap) have one name either way. The name is built for every
// known op and kind, whether or not Valid(k, op); FuncName returns "" for an
// unknown op or kind. The names come from internal/gentables/atomics.table.
func FuncName(k Kind, op Op, fetch bool) string {
	if int(op) >= len(funcNames) || int(k) >= len(kindNames) {
		return ""
	}
	if fetch {
		return funcNames[op][k][1]
	}
	return funcNames[op][k][0]
}
