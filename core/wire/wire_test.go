package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func frame(h Header, payload []byte) []byte { return Append(nil, h, payload) }

func TestRoundTrip(t *testing.T) {
	key := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	cases := []struct {
		h       Header
		payload []byte
	}{
		{Header{Op: OpHello}, []byte("secret")},
		{Header{Op: OpPing, ID: 7}, nil},
		{Header{Op: OpGet, ID: 1, Key: key, Arg: [4]uint64{100, 256}}, nil},
		{Header{Op: OpPut, ID: 2, Key: key, Arg: [4]uint64{8, 3}}, []byte("abc")},
		{Header{Op: OpScatterStrided, Key: key, Arg: [4]uint64{1, 2, 3, 4}}, make([]byte, 8)},
		{Header{Op: OpGatherIndexed, Key: key, Arg: [4]uint64{0, 2, 0, 8}}, make([]byte, 16)},
		{Header{Op: OpScatterIndexed, Key: key, Arg: [4]uint64{0, 2, 0, 4}}, make([]byte, 24)},
		{Header{Op: OpAtomic, Flags: FlagFetch, Key: key, Arg: [4]uint64{8, 2, 3}}, make([]byte, 32)},
		{Header{Op: OpGet, Flags: FlagReply, ID: 1}, []byte("data")},
		{Header{Op: OpPut, Flags: FlagReply, Status: 13, ID: 2}, []byte("out of range")},
		{Header{Op: OpAtomic, Flags: FlagReply, ID: 3}, make([]byte, 16)},
		{Header{Op: OpOpenFD, Flags: FlagReply, Arg: [4]uint64{4096, 100, 3}}, nil},
		{Header{Op: OpGet, Flags: FlagReply, Status: StatusStaleKey}, nil},
		{Header{Op: OpFabricKey, ID: 4, Key: key}, nil},
		{Header{Op: OpFabricKey, Flags: FlagReply, ID: 4, Arg: [4]uint64{0xdeadbeef, 0x7f0000001000, 4096, 3}}, nil},
		{Header{Op: OpFabricKey, Flags: FlagReply, Status: 16, ID: 5}, []byte("no fabric endpoint")},
	}
	for _, c := range cases {
		b := frame(c.h, c.payload)
		if len(b) != HeaderSize+len(c.payload) {
			t.Fatalf("%v: frame of %d bytes", c.h.Op, len(b))
		}
		h, p, n, err := Decode(append(b, 0xee))
		if err != nil {
			t.Fatalf("%v: %v", c.h.Op, err)
		}
		want := c.h
		want.PayloadLen = uint32(len(c.payload))
		if h != want || !bytes.Equal(p, c.payload) || n != len(b) {
			t.Fatalf("%v: decoded %+v %q %d, want %+v %q %d", c.h.Op, h, p, n, want, c.payload, len(b))
		}
		var buf [HeaderSize]byte
		h2, err := ReadHeader(bytes.NewReader(b), &buf)
		if err != nil || h2 != want {
			t.Fatalf("%v: ReadHeader %+v %v", c.h.Op, h2, err)
		}
	}
}

func TestLayout(t *testing.T) {
	// Byte positions are the contract with other implementations.
	h := Header{Op: OpGet, Flags: FlagReply, Status: 0x01020304, PayloadLen: 0, ID: 0x1122334455667788,
		Arg: [4]uint64{0xa, 0xb, 0xc, 0xd}}
	h.Key[0], h.Key[15] = 0x42, 0x43
	var b [HeaderSize]byte
	h.Encode(b[:])
	le := binary.LittleEndian
	if string(b[0:4]) != "FAMW" || b[4] != 1 || b[5] != 3 || b[6] != 1 || b[7] != 0 ||
		le.Uint32(b[8:]) != 0x01020304 || le.Uint32(b[12:]) != 0 || le.Uint64(b[16:]) != 0x1122334455667788 ||
		b[24] != 0x42 || b[39] != 0x43 || le.Uint64(b[40:]) != 0xa || le.Uint64(b[48:]) != 0xb ||
		le.Uint64(b[56:]) != 0xc || le.Uint64(b[64:]) != 0xd {
		t.Fatalf("layout: % x", b)
	}
}

func TestRejects(t *testing.T) {
	good := Header{Op: OpGet, Arg: [4]uint64{0, 16}}
	mutate := func(f func(b []byte)) []byte {
		b := frame(good, nil)
		f(b)
		return b
	}
	le := binary.LittleEndian
	cases := map[string][]byte{
		"magic":            mutate(func(b []byte) { b[0] = 'X' }),
		"version":          mutate(func(b []byte) { b[4] = 2 }),
		"opcode 0":         mutate(func(b []byte) { b[5] = 0 }),
		"opcode 200":       mutate(func(b []byte) { b[5] = 200 }),
		"flags":            mutate(func(b []byte) { b[6] = 0x80 }),
		"fetch on get":     mutate(func(b []byte) { b[6] = FlagFetch }),
		"reserved":         mutate(func(b []byte) { b[7] = 1 }),
		"request status":   mutate(func(b []byte) { le.PutUint32(b[8:], 4) }),
		"huge payload":     mutate(func(b []byte) { le.PutUint32(b[12:], MaxPayload+1) }),
		"get payload":      frame(Header{Op: OpGet}, []byte{1}),
		"ping payload":     frame(Header{Op: OpPing}, []byte{1}),
		"put mismatch":     frame(Header{Op: OpPut, Arg: [4]uint64{0, 5}}, []byte{1}),
		"scatter overflow": frame(Header{Op: OpScatterStrided, Arg: [4]uint64{0, 1 << 40, 0, 1 << 40}}, nil),
		"scatter mismatch": frame(Header{Op: OpScatterStrided, Arg: [4]uint64{0, 2, 0, 4}}, make([]byte, 7)),
		"indexed overflow": frame(Header{Op: OpGatherIndexed, Arg: [4]uint64{0, 1 << 62}}, nil),
		"sindexed esize":   frame(Header{Op: OpScatterIndexed, Arg: [4]uint64{0, 0, 0, ^uint64(0)}}, nil),
		"atomic args":      frame(Header{Op: OpAtomic}, make([]byte, 16)),
		"long token":       frame(Header{Op: OpHello}, make([]byte, MaxToken+1)),
		"reply status":     frame(Header{Op: OpGet, Flags: FlagReply, Status: 5000}, nil),
		"reply message":    frame(Header{Op: OpGet, Flags: FlagReply, Status: 4}, make([]byte, MaxMessage+1)),
		"atomic reply":     frame(Header{Op: OpAtomic, Flags: FlagReply}, make([]byte, 8)),
		"put reply data":   frame(Header{Op: OpPut, Flags: FlagReply}, make([]byte, 8)),
		"fabrickey data":   frame(Header{Op: OpFabricKey}, make([]byte, 8)),
		"fabrickey reply":  frame(Header{Op: OpFabricKey, Flags: FlagReply}, make([]byte, 8)),
		"opcode past end":  mutate(func(b []byte) { b[5] = byte(opEnd) }),
	}
	for name, b := range cases {
		if _, _, _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode error %v, want ErrMalformed", name, err)
		}
	}
	b := frame(Header{Op: OpPut, Arg: [4]uint64{0, 4}}, []byte("abcd"))
	for _, n := range []int{0, 10, HeaderSize, len(b) - 1} {
		if _, _, _, err := Decode(b[:n]); err != io.ErrUnexpectedEOF {
			t.Errorf("Decode of %d/%d bytes: %v, want ErrUnexpectedEOF", n, len(b), err)
		}
	}
}

// TestOpNames checks that every opcode has its name (a new opcode whose
// name was forgotten would print as "") and that the codes of spec/wire.md
// do not move.
func TestOpNames(t *testing.T) {
	for o := Op(1); o < opEnd; o++ {
		if opNames[o] == "" {
			t.Errorf("opcode %d has no name in opNames", o)
		}
	}
	if OpFabricKey != 13 || OpFabricKey.String() != "FabricKey" || OpRaid != 14 || OpRaid.String() != "Raid" || opEnd.String() != "Op(15)" {
		t.Errorf("FabricKey is %d %q, Raid %d %q, opEnd %q", uint8(OpFabricKey), OpFabricKey, uint8(OpRaid), OpRaid, opEnd)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder: it must never panic, and
// whatever it accepts must be valid and encode back to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(frame(Header{Op: OpPut, ID: 9, Arg: [4]uint64{16, 4}}, []byte("abcd")))
	f.Add(frame(Header{Op: OpAtomic, Flags: FlagFetch, Arg: [4]uint64{8, 2, 3}}, make([]byte, 32)))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, n, err := Decode(b)
		if err != nil {
			if err != io.ErrUnexpectedEOF && !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error kind %v", err)
			}
			return
		}
		if n != HeaderSize+len(p) || uint32(len(p)) != h.PayloadLen || n > len(b) {
			t.Fatalf("lengths: n=%d payload=%d header says %d", n, len(p), h.PayloadLen)
		}
		if err := h.Check(); err != nil {
			t.Fatalf("accepted header fails Check: %v", err)
		}
		if out := Append(nil, h, p); !bytes.Equal(out, b[:n]) {
			t.Fatalf("re-encoding differs:\n% x\n% x", out, b[:n])
		}
	})
}
