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

// peerControl is a Controller answering CtlLookup with the caller's
// identity and a descriptor (fdControl's), for TestUnixServerLeavesPoller.
type peerControl struct {
	fdControl
	peers chan Peer
}

func (c *peerControl) Control(p Peer, method, session uint64, req []byte) ([]byte, *os.File, uint64, uint64, uint8, error) {
	select {
	case c.peers <- p:
	default:
	}
	return c.fdControl.Control(p, method, session, req)
}

// TestUnixServerLeavesPoller: the connections a server accepts on a Unix
// socket are quietConns no epoll instance watches (so famd's polling
// reader wakes no runtime thread, see Server.admitAndServe), the control
// calls made on them still carry the peer's kernel credentials and pass
// descriptors, and Close ends them.
func TestUnixServerLeavesPoller(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	k := mem.add(4096, 4096, 3)
	ctl := &peerControl{fdControl: fdControl{dir: t.TempDir()}, peers: make(chan Peer, 1)}
	s := NewServer(mem, ServerOptions{FDs: mem, Control: ctl})
	addr := serve(t, s, "unix")
	c := dial(t, "unix", addr, ClientOptions{Conns: 1})
	if err := c.Put(k, 0, []byte("quiet")); err != nil {
		t.Fatal(err)
	}
	rep, f, off, size, _, err := c.Control(CtlLookup, 0, []byte("who"))
	if err != nil || f == nil {
		t.Fatalf("Control over a quiet served connection: %q, %v, %v", rep, f, err)
	}
	b := make([]byte, size)
	_, err = f.ReadAt(b, int64(off))
	f.Close()
	if err != nil || string(b) != "who" {
		t.Fatalf("passed descriptor holds %q (%v), want \"who\"", b, err)
	}
	if p := <-ctl.peers; !p.Unix || p.UID != uint32(os.Getuid()) || p.GID != uint32(os.Getgid()) {
		t.Fatalf("control call's peer %+v, want Unix uid %d gid %d", p, os.Getuid(), os.Getgid())
	}
	f, _, _, _, err = c.OpenFD(k)
	if err != nil {
		t.Fatalf("OpenFD over a quiet served connection: %v", err)
	}
	f.Close()
	watched := epollTargets(t)
	s.mu.Lock()
	var served []*quietConn
	for sc := range s.conns {
		q, ok := sc.(*quietConn)
		if !ok {
			s.mu.Unlock()
			t.Fatalf("served connection is a %T, want a *quietConn", sc)
		}
		served = append(served, q)
	}
	s.mu.Unlock()
	if len(served) == 0 {
		t.Fatal("no served connection to inspect")
	}
	for _, q := range served {
		q.mu.Lock()
		fd := q.fd
		q.mu.Unlock()
		if watched[fd] {
			t.Fatalf("served descriptor %d is registered with epoll", fd)
		}
	}
	// Close must reach the quiet connections, else it would wait for
	// their handlers for ever.
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Server.Close did not end its quiet connections")
	}
	if err := c.Ping(); err == nil {
		t.Fatal("Ping succeeded after the server closed")
	}
}
