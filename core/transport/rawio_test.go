package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gofam/openfam/core/wire"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		acc <- c
	}()
	a, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestRawWriterFullBuffer: raw writes that fill the socket's buffers wait
// for room (the EAGAIN path) and deliver every byte in order; a write
// deadline still bounds a write that cannot proceed.
func TestRawWriterFullBuffer(t *testing.T) {
	a, b := tcpPair(t)
	w := newRawWriter(a)
	if w.rc == nil {
		t.Fatal("a TCP connection should be written raw")
	}
	const chunk, chunks = maxRawWrite, 16
	want := make([]byte, chunk*chunks)
	for i := range want {
		want[i] = byte(i * 7)
	}
	// Buffers far smaller than a write: each write meets a full buffer
	// (partial sends, then EAGAIN) whatever pace the reader keeps.
	a.(*net.TCPConn).SetWriteBuffer(16 << 10)
	b.(*net.TCPConn).SetReadBuffer(16 << 10)
	got := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()
	for k := 0; k < chunks; k++ {
		if n, err := w.Write(want[k*chunk : (k+1)*chunk]); err != nil || n != chunk {
			t.Fatalf("chunk %d: wrote %d of %d: %v", k, n, chunk, err)
		}
	}
	if w.waits == 0 {
		t.Fatal("no write met a full buffer: the test did not exercise waiting")
	}
	a.(*net.TCPConn).CloseWrite()
	if g := <-got; !bytes.Equal(g, want) {
		t.Fatalf("read %d bytes that differ from the %d written", len(g), len(want))
	}

	// Nobody reads c's peer: a deadline must stop the writer.
	c, _ := tcpPair(t)
	wc := newRawWriter(c)
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	var err error
	for k := 0; k < 1024 && err == nil; k++ { // 64 MiB at most
		_, err = wc.Write(want[:chunk])
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a peer that reads nothing: %v, want a deadline error", err)
	}
}

// TestRawWriterPeerGone: writing to a connection whose peer has gone is
// an error wrapping the system's (EPIPE or ECONNRESET), never a signal.
func TestRawWriterPeerGone(t *testing.T) {
	a, b := tcpPair(t)
	w := newRawWriter(a)
	b.Close()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for err == nil && time.Now().Before(deadline) {
		// The first writes may still be accepted; the reset follows.
		_, err = w.Write([]byte("a small frame"))
	}
	var op *net.OpError
	if !errors.As(err, &op) || !(errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("write to a closed peer: %v (%T), want a *net.OpError wrapping EPIPE or ECONNRESET", err, err)
	}
	a.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close: %v, want net.ErrClosed", err)
	}
}

// TestReadHeaderMatchesWire: readHeader (the header parsed in the bufio
// buffer) gives what wire.ReadHeader gives for the same bytes: the header
// and the bytes after it left unread, whether the header comes whole or
// a byte at a time; io.EOF on an empty stream, io.ErrUnexpectedEOF on a
// cut header, a malformed header's error.
func TestReadHeaderMatchesWire(t *testing.T) {
	h := wire.Header{Op: wire.OpGet, ID: 7, Key: [16]byte{1, 2, 3}, Arg: [4]uint64{8, 16}}
	var frame [wire.HeaderSize]byte
	h.Encode(frame[:])
	bad := frame
	bad[0] ^= 0xff // bad magic
	cases := []struct {
		name string
		in   []byte
	}{
		{"whole", append(frame[:], "tail"...)},
		{"empty", nil},
		{"cut", frame[:wire.HeaderSize-1]},
		{"malformed", bad[:]},
	}
	for _, tc := range cases {
		for _, oneByte := range []bool{false, true} {
			var r1, r2 io.Reader = bytes.NewReader(tc.in), bytes.NewReader(tc.in)
			if oneByte {
				r1, r2 = iotest.OneByteReader(r1), iotest.OneByteReader(r2)
			}
			br := bufio.NewReader(r1)
			got, gerr := readHeader(br)
			var buf [wire.HeaderSize]byte
			want, werr := wire.ReadHeader(r2, &buf)
			if got != want || (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
				t.Errorf("%s (one byte at a time: %v): readHeader = %+v, %v; wire.ReadHeader = %+v, %v",
					tc.name, oneByte, got, gerr, want, werr)
			}
			if tc.name == "whole" {
				rest, _ := io.ReadAll(br)
				if string(rest) != "tail" {
					t.Errorf("%s: %q left after the header, want \"tail\"", tc.name, rest)
				}
			}
		}
	}
}
