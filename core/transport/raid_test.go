package transport

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// gateMem is a fileMem whose Resolve either announces that a request
// arrived (arrived closed) or holds the request until another server's
// has arrived (wait), giving up after a generous bound.
type gateMem struct {
	*fileMem
	once    sync.Once
	arrived chan struct{}
	wait    <-chan struct{}
}

func (g *gateMem) Resolve(k Key) ([]byte, uint8, bool) {
	if g.arrived != nil {
		g.once.Do(func() { close(g.arrived) })
	}
	if g.wait != nil {
		select {
		case <-g.wait:
		case <-time.After(30 * time.Second):
			return nil, 0, false // the test reports it
		}
	}
	return g.fileMem.Resolve(k)
}

// TestPutNowWritesBeforeWaiting checks what RAID1 puts rely on to write
// their two copies at once from one goroutine: PutNow (and PutSend) has
// written its frame when it returns. Server a holds its put until server
// b has received its own, which is started only after a's PutNow returned
// and is waited for only after a's reply: were b's frame written only
// when waited for, a would hold its reply until its bound and fail.
func TestPutNowWritesBeforeWaiting(t *testing.T) {
	starts := map[string]func(c *Client, k Key, src []byte) func() error{
		"PutNow": func(c *Client, k Key, src []byte) func() error { return c.PutNow(k, 64, src).Wait },
		"PutSend": func(c *Client, k Key, src []byte) func() error {
			s := c.PutSend(k, 64, src)
			return s.Wait
		},
	}
	for _, network := range []string{"tcp", "unix"} {
		for how, start := range starts {
			t.Run(network+"/"+how, func(t *testing.T) {
				bArrived := make(chan struct{})
				ma := &gateMem{fileMem: newFileMem(t, t.TempDir(), 1<<20), wait: bArrived}
				mb := &gateMem{fileMem: newFileMem(t, t.TempDir(), 1<<20), arrived: bArrived}
				ka, kb := ma.add(0, 4096, RightRead|RightWrite), mb.add(0, 4096, RightRead|RightWrite)
				ca := dial(t, network, serve(t, NewServer(ma, ServerOptions{}), network), ClientOptions{Timeout: 60 * time.Second})
				cb := dial(t, network, serve(t, NewServer(mb, ServerOptions{}), network), ClientOptions{Timeout: 60 * time.Second})
				src := bytes.Repeat([]byte{0x5a}, 256)
				waitA := start(ca, ka, src)
				waitB := start(cb, kb, src)
				if err := waitA(); err != nil {
					t.Fatalf("put at server a: %v (b's frame not written by %s?)", err, how)
				}
				if err := waitB(); err != nil {
					t.Fatalf("put at server b: %v", err)
				}
				for _, m := range []*gateMem{ma, mb} {
					if !bytes.Equal(m.data[64:64+256], src) {
						t.Fatal("the put's bytes are not in the server's memory")
					}
				}
			})
		}
	}
}
