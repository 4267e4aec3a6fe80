package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofam/openfam/core/wire"
)

// shortConn passes the first budget bytes written to it and then closes
// the connection, as a peer that dies part way through a frame does.
type shortConn struct {
	net.Conn
	mu     sync.Mutex
	budget int
}

func (c *shortConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(b) <= c.budget {
		c.budget -= len(b)
		return c.Conn.Write(b)
	}
	n, _ := c.Conn.Write(b[:c.budget])
	c.budget = 0
	c.Conn.Close()
	return n, io.ErrShortWrite
}

// cutProxy forwards client connections to a server; on the first one the
// client-to-server direction goes through a shortConn with the given
// budget, later ones are passed whole. Closing either side closes both.
func cutProxy(t *testing.T, server string, budget int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ; first = false {
			cc, err := l.Accept()
			if err != nil {
				return
			}
			sc, err := net.Dial("tcp", server)
			if err != nil {
				cc.Close()
				return
			}
			var up net.Conn = sc
			if first {
				up = &shortConn{Conn: sc, budget: budget}
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				io.Copy(up, cc)
				cc.Close()
				sc.Close()
			}()
			go func() {
				defer wg.Done()
				io.Copy(cc, sc)
				cc.Close()
				sc.Close()
			}()
		}
	}()
	return l.Addr().String()
}

// TestFaultShortWrite: the connection carrying a put dies after the
// header and part of the payload reached the server.
//
// What the protocol allows (spec/wire.md section 10: a request outstanding
// when its connection failed may or may not have executed): the server
// reads a put's payload from the socket straight into the item, so a torn
// put may leave a prefix of its payload in place, at most the bytes that
// arrived, and nothing outside its range; it is never acknowledged. The
// client must see ErrUnavailable, the server must close only that
// connection and go on serving the others, and a new connection must work.
func TestFaultShortWrite(t *testing.T) {
	ended := make(chan string, 4)
	f := newFixture(t, "tcp", ServerOptions{Logf: func(format string, args ...any) {
		if strings.Contains(format, "connection from") {
			select {
			case ended <- format:
			default:
			}
		}
	}})
	other := dial(t, "tcp", f.adr, ClientOptions{Conns: 1, Timeout: 60 * time.Second})
	if err := other.Put(f.rw, 0, bytes.Repeat([]byte("before"), itemSize/6)); err != nil {
		t.Fatal(err)
	}

	// Hello (a bare header: no token), the put's header, then arrived
	// bytes of its payload.
	const off, n, arrived = 1024, 32 << 10, 10000
	old := make([]byte, itemSize)
	if err := other.Get(f.rw, 0, old); err != nil {
		t.Fatal(err)
	}
	c := dial(t, "tcp", cutProxy(t, f.adr, 2*wire.HeaderSize+arrived), ClientOptions{Conns: 1, Timeout: 5 * time.Second})
	src := bytes.Repeat([]byte{0xC3}, n)
	err := c.Put(f.rw, off, src)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("torn put returned %v, want an error wrapping ErrUnavailable", err)
	}
	select {
	case <-ended:
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not drop the torn connection within 60s")
	}

	// Read back over the healthy connection (the server's goroutine wrote
	// the heap; the reply orders that write before this read).
	got := make([]byte, itemSize)
	if err := other.Get(f.rw, 0, got); err != nil {
		t.Fatalf("the other connection broke: %v", err)
	}
	if !bytes.Equal(got[:off], old[:off]) || !bytes.Equal(got[off+n:], old[off+n:]) {
		t.Fatal("the torn put changed bytes outside its range")
	}
	if !bytes.Equal(got[off+arrived:off+n], old[off+arrived:off+n]) {
		t.Fatal("bytes of the torn put that never reached the server are in the item")
	}
	for i := off; i < off+arrived; i++ {
		if got[i] != old[i] && got[i] != src[i-off] {
			t.Fatalf("byte %d of the item is %#x: neither its old value nor the put's", i, got[i])
		}
	}
	applied := 0
	for i := off; i < off+arrived; i++ {
		if got[i] == src[i-off] && got[i] != old[i] {
			applied++
		}
	}
	t.Logf("torn put: %d of the %d bytes that arrived were applied, %d of %d never arrived", applied, arrived, n-arrived, n)

	// The failed client dials again (through the proxy, now whole) and the
	// same put goes through.
	if err := c.Put(f.rw, off, src); err != nil {
		t.Fatalf("put on a new connection: %v", err)
	}
	if err := other.Get(f.rw, 0, got); err != nil || !bytes.Equal(got[off:off+n], src) {
		t.Fatalf("repeated put not in the item: %v", err)
	}
}
