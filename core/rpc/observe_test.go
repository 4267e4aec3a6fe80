package rpc_test

import (
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/internal/famauth"
	"github.com/gofam/openfam/internal/munge/mungetest"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// callCounter is an rpc.Observer that remembers every call.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int // "Method code fam"
}

func (c *callCounter) Call(method string, g codes.Code, fam int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method+" "+g.String()+" "+string(rune('0'+fam))]++
}

func (c *callCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[k]
}

// The Observer hears of each control call with its result: OK, a FAM
// error carried in the reply, or a call not served. The MUNGE challenge
// that starts every MUNGE login is not a failure and is not counted.
func TestObserverCalls(t *testing.T) {
	sock := mungetest.Start(t)
	const token = "observer-test-token"
	obs := &callCounter{calls: map[string]int{}}
	d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: token, Auth: famauth.ModeMunge, MungeSocket: sock,
		CallObserver: obs})
	createRegion(t, c, "r", 1<<20, 0o600)
	if _, err := c.LookupRegion(ctx(t), &pb.LookupRegionRequest{Name: "none"}); err != nil {
		t.Fatal(err)
	}
	if obs.get("CreateRegion OK 0") != 1 || obs.get("LookupRegion OK 8") != 1 {
		t.Errorf("calls seen: %v", obs.calls)
	}

	conn, err := rpc.DialTCP(d.Addr(), &famauth.Client{Token: token, MungeSocket: sock}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pb.NewFamClient(conn).Info(ctx(t), &pb.InfoRequest{}); err != nil {
		t.Fatal(err)
	}
	if obs.get("Info OK 0") != 1 || obs.get("Info Unauthenticated 0") != 0 {
		t.Errorf("after one MUNGE login and Info: calls seen %v; want Info OK once and no Unauthenticated", obs.calls)
	}
	// A wrong token is refused before any challenge: that counts.
	if _, err := spoofer(t, d.Addr(), "wrong-token", 0, 0).Info(ctx(t), &pb.InfoRequest{}); err == nil {
		t.Fatal("a client with a wrong token was served")
	}
	if obs.get("Info Unauthenticated 0") == 0 {
		t.Errorf("a refused call was not counted: %v", obs.calls)
	}
}
