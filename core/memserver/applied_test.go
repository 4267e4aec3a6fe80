package memserver

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestAppliedOpsKeepTheLatest checks the memory of applied atomics that
// answers retries: a result stays findable, by region and id, for
// appliedMemory later records and no longer; recording an id again keeps
// its first result; a returned result is the caller's copy.
func TestAppliedOpsKeepTheLatest(t *testing.T) {
	var rs raidServer
	res := func(n uint64) []byte {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint64(b, n)
		return b
	}
	rs.record(7, 1, res(100))
	rs.record(7, 1, res(999)) // a retry's record: the first result stays
	rs.record(8, 1, res(200)) // same id, other region
	if got, ok := rs.applied(7, 1); !ok || !bytes.Equal(got, res(100)) {
		t.Fatalf("applied(7, 1) = %x, %v; want %x", got, ok, res(100))
	}
	if got, ok := rs.applied(8, 1); !ok || !bytes.Equal(got, res(200)) {
		t.Fatalf("applied(8, 1) = %x, %v; want %x", got, ok, res(200))
	}
	if _, ok := rs.applied(7, 2); ok {
		t.Fatal("an id never recorded was found")
	}
	got, _ := rs.applied(7, 1)
	got[0] ^= 0xff
	if again, _ := rs.applied(7, 1); !bytes.Equal(again, res(100)) {
		t.Fatal("changing a returned result changed the record")
	}
	// appliedMemory-2 more records: (7, 1) is then the oldest of
	// appliedMemory and still kept; one more pushes it out, not (8, 1).
	for i := uint64(0); i < appliedMemory-2; i++ {
		rs.record(9, 1000+i, res(i))
	}
	if _, ok := rs.applied(7, 1); !ok {
		t.Fatal("a record was forgotten before appliedMemory later ones")
	}
	rs.record(9, 1<<40, res(1))
	if _, ok := rs.applied(7, 1); ok {
		t.Fatal("the oldest record outlived appliedMemory later ones")
	}
	if got, ok := rs.applied(8, 1); !ok || !bytes.Equal(got, res(200)) {
		t.Fatalf("applied(8, 1) = %x, %v after the oldest went; want %x", got, ok, res(200))
	}
	if got, ok := rs.applied(9, 1000+appliedMemory-3); !ok || !bytes.Equal(got, res(appliedMemory-3)) {
		t.Fatalf("the latest record: %x, %v", got, ok)
	}
	if _, ok := rs.applied(7, 0); ok {
		t.Fatal("id 0 (no id) was found")
	}
}
