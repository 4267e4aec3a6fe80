package transport

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// epollTargets returns the descriptors registered with any epoll instance
// of this process (the Go runtime's network poller among them), read from
// /proc/self/fdinfo.
func epollTargets(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	out := map[int]bool{}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.Contains(link, "eventpoll") {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "tfd:" {
				if n, err := strconv.Atoi(f[1]); err == nil {
					out[n] = true
				}
			}
		}
	}
	return out
}

// TestUnixClientLeavesPoller: a client's connections to a Unix socket are
// quietConns, whose descriptors no epoll instance of the process watches
// (so a reply arriving while its caller polls wakes no runtime thread,
// see quietConn), and they still carry requests and passed descriptors.
func TestUnixClientLeavesPoller(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	k := mem.add(4096, 4096, 3)
	addr := serve(t, NewServer(mem, ServerOptions{FDs: mem}), "unix")
	c := dial(t, "unix", addr, ClientOptions{Conns: 2, Spin: 50 * time.Microsecond})
	if err := c.Put(k, 0, []byte("quiet")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if err := c.Get(k, 0, got); err != nil || string(got) != "quiet" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	f, _, _, _, err := c.OpenFD(k)
	if err != nil {
		t.Fatalf("OpenFD over a quiet connection: %v", err)
	}
	f.Close()
	watched := epollTargets(t)
	n := 0
	for i := range c.slots {
		cc := c.slots[i].live()
		if cc == nil {
			continue
		}
		n++
		q, ok := cc.c.(*quietConn)
		if !ok {
			t.Fatalf("connection %d is a %T, want a *quietConn", i, cc.c)
		}
		if watched[q.fd] {
			t.Fatalf("connection %d's descriptor %d is registered with epoll", i, q.fd)
		}
	}
	if n == 0 {
		t.Fatal("no live connection to inspect")
	}
}

func quietPair(t *testing.T) (*quietConn, net.Conn) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "q.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	uc, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := newQuietConn(uc.(*net.UnixConn))
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { nc.Close(); peer.Close() })
	return nc.(*quietConn), peer
}

// TestQuietConnCloseEndsWait: Close ends a read waiting in poll(2) (or
// about to) at once, and the peer sees the connection end.
func TestQuietConnCloseEndsWait(t *testing.T) {
	q, peer := quietPair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := q.Read(make([]byte, 8))
		errc <- err
	}()
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a read across Close returned no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the waiting read within 30s")
	}
	peer.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := peer.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("peer read %d bytes, %v; want end of file", n, err)
	}
	if err := q.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v, want net.ErrClosed", err)
	}
}

// TestQuietConnDeadline: reads time out at the read deadline with
// os.ErrDeadlineExceeded (what the client's lead checks), and bytes pass
// both ways otherwise.
func TestQuietConnDeadline(t *testing.T) {
	q, peer := quietPair(t)
	q.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := q.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	q.SetReadDeadline(time.Time{})
	if _, err := q.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	peer.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := peer.Read(b); err != nil || string(b) != "ping" {
		t.Fatalf("peer read %q, %v", b, err)
	}
	if _, err := peer.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Read(b); err != nil || string(b[:n]) != "pong" {
		t.Fatalf("read %q, %v", b[:n], err)
	}
}
