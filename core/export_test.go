package core

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Test-only hooks for the external tests (package core_test) that drive
// exact interleavings between famd's revocation events and a client's own
// calls.

// Revocations holds famd's revocation events for an instance instead of
// handling them, so a test decides when each is delivered.
type Revocations struct {
	f       *Fam
	mu      sync.Mutex
	arrived map[transport.Key]chan struct{}
}

func (q *Revocations) slot(k transport.Key) chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	ch := q.arrived[k]
	if ch == nil {
		ch = make(chan struct{})
		q.arrived[k] = ch
	}
	return ch
}

// HoldRevocations makes f queue the revocation events famd sends instead
// of handling them. Call it before the events of interest can arrive.
func (f *Fam) HoldRevocations() *Revocations {
	q := &Revocations{f: f, arrived: map[transport.Key]chan struct{}{}}
	hold := func(k transport.Key) {
		ch := q.slot(k)
		select {
		case <-ch: // famd may repeat an event; once is enough
		default:
			close(ch)
		}
	}
	remoteOf(f).revoked.Store(&hold)
	return q
}

// Arrived returns a channel closed once famd has sent the revocation of
// key.
func (q *Revocations) Arrived(key [16]byte) <-chan struct{} { return q.slot(key) }

// Deliver handles the revocation of key now, on this goroutine, as the
// session loop would have when it arrived.
func (q *Revocations) Deliver(key [16]byte) { q.f.keyRevoked(key) }

// KeyOf returns the famd key of a famd-served handle's current view.
func KeyOf(it *Item) [16]byte { return it.view.Load().key }

// hookedClient runs a test's function after each ItemAt call returns.
type hookedClient struct {
	pb.FamClient
	after func()
}

func (h hookedClient) ItemAt(ctx context.Context, in *pb.ItemAtRequest, opts ...grpc.CallOption) (*pb.ItemReply, error) {
	rep, err := h.FamClient.ItemAt(ctx, in, opts...)
	h.after()
	return rep, err
}

// AfterItemAt makes fn run after every ItemAt call of f (resolving a
// handle from its global descriptor, or renewing a key) has its answer and
// before the caller uses it. Set it before f is used concurrently.
func (f *Fam) AfterItemAt(fn func()) {
	r := remoteOf(f)
	r.cl = hookedClient{FamClient: r.cl, after: fn}
}

// ControlState reports the state of f's gRPC connection to famd, for the
// external tests of reconnection.
func ControlState(f *Fam) connectivity.State { return remoteOf(f).conn.GetState() }

// AfterBackupCheck makes fn run when a famd-served fam_backup has checked
// that its name is free, or fam_restore that its backup exists, and
// before it starts the copy.
func (f *Fam) AfterBackupCheck(fn func()) { remoteOf(f).afterBackupCheck = fn }

// remoteOf returns the backend of a famd-served instance.
func remoteOf(f *Fam) *remote { return f.b.(*remote) }

// localOf returns the backend of an embedded instance.
func localOf(f *Fam) *local { return f.b.(*local) }

// MemFrames returns, for each memory server f has a data-plane client
// for, the frames sent on each connection of that client's pool
// (transport.Client.Frames).
func MemFrames(f *Fam) map[uint64][]uint64 {
	r := remoteOf(f)
	r.mmu.Lock()
	defer r.mmu.Unlock()
	out := map[uint64][]uint64{}
	for id, c := range r.mems {
		if tc := ctlClient(c); tc != nil {
			out[id] = tc.Frames()
		}
	}
	return out
}

// SetItemMapBudget makes the budget of famd-served item mappings n (none
// taken yet) until the returned function restores it.
func SetItemMapBudget(n int64) (restore func()) {
	old := itemMaps
	itemMaps = newMapBudget(n)
	return func() { itemMaps = old }
}
