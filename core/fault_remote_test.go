package core

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/internal/mocks"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Fault injection against a famd-served (client mode) instance: the
// control plane and the data plane are gomock doubles, so each test decides
// exactly where and how the fabric fails.

// newFaultFam builds a client-mode instance around the given planes, as
// Initialize does after dialRemote, and finalizes it when the test ends.
func newFaultFam(t *testing.T, cl pb.FamClient, dp DataPlane, timeout time.Duration) *Fam {
	t.Helper()
	f := &Fam{famState: newFamState(DefaultOptions())}
	f.peCount = 1
	f.b = newRemote("fault-test", cl, dp, false, timeout, "")
	f.def = &Context{f: f}
	t.Cleanup(func() {
		if !f.closed.Load() {
			if err := f.Finalize(); err != nil {
				t.Errorf("Finalize: %v", err)
			}
		}
	})
	return f
}

// faultItem is an item famd would announce: its key and record.
type faultItem struct {
	name string
	key  transport.Key
	off  uint64 // global descriptor offset
	size uint64
}

func (fi faultItem) info() *pb.ItemInfo {
	return &pb.ItemInfo{RegionId: 7, Offset: fi.off, Size: fi.size, Name: fi.name, Mode: 0o600,
		Rights: uint32(RightRead | RightWrite), Key: fi.key[:]}
}

func keyNamed(s string) (k transport.Key) {
	copy(k[:], s)
	return k
}

// lookupClient is a control plane that knows items and accepts CloseItem
// at any time (handles are forgotten at Finalize).
func lookupClient(ctrl *gomock.Controller, items ...faultItem) *mocks.MockFamClient {
	cl := mocks.NewMockFamClient(ctrl)
	cl.EXPECT().Lookup(gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, in *pb.LookupRequest, _ ...grpc.CallOption) (*pb.ItemReply, error) {
			for _, it := range items {
				if it.name == in.GetItem() {
					return &pb.ItemReply{Item: it.info()}, nil
				}
			}
			return &pb.ItemReply{Err: &pb.FamError{Code: int32(CodeNotFound), Msg: "no such item"}}, nil
		}).AnyTimes()
	cl.EXPECT().CloseItem(gomock.Any(), gomock.Any()).Return(&pb.Reply{}, nil).AnyTimes()
	return cl
}

func mustLookup(t *testing.T, f *Fam, name string) *Item {
	t.Helper()
	it, err := f.Lookup(name, "region")
	if err != nil {
		t.Fatalf("Lookup(%s): %v", name, err)
	}
	return it
}

// wantFault checks that err is an *Error with code and operation op.
func wantFault(t *testing.T, err error, code Code, op string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want an *Error with code %d", err, err, code)
	}
	if e.Code != code || e.Op != op {
		t.Fatalf("got %v (code %d, op %q), want code %d (%v) from %s", err, e.Code, e.Op, code, code, op)
	}
}

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// errDropped is what transport.Client returns when the connection carrying a
// request breaks.
var errDropped = fmt.Errorf("%w: read unix ->/run/famd/data.sock: connection reset by peer", transport.ErrUnavailable)

// TestFaultDroppedMidTransfer: the connection breaks while a transfer is
// under way. The caller gets CodeRPC, the failed request is not retried
// behind its back (a retried atomic would apply twice), the bytes outside
// the transfer are untouched, and the next call on the same handle works.
func TestFaultDroppedMidTransfer(t *testing.T) {
	ctrl := gomock.NewController(t)
	item := faultItem{name: "item", key: keyNamed("dropped"), off: 4096, size: 4096}
	// mem is the item as the memory server holds it.
	mem := bytes.Repeat([]byte{0x55}, int(item.size))
	apply := func(_ transport.Key, off uint64, src []byte) error { copy(mem[off:], src); return nil }
	read := func(_ transport.Key, off uint64, dst []byte) error { copy(dst, mem[off:]); return nil }
	dp := mocks.NewMockDataPlane(ctrl)
	dp.EXPECT().Close().Return(nil).AnyTimes()
	f := newFaultFam(t, lookupClient(ctrl, item), dp, time.Second)
	c := f.Default()
	it := mustLookup(t, f, "item")

	// Blocking put: half the payload reached the item, then the reset.
	src := fill(1024, 1)
	before := bytes.Clone(mem)
	gomock.InOrder(
		dp.EXPECT().Put(item.key, uint64(512), src).DoAndReturn(func(_ transport.Key, off uint64, b []byte) error {
			copy(mem[off:], b[:len(b)/2])
			return errDropped
		}),
		dp.EXPECT().Put(item.key, uint64(512), src).DoAndReturn(apply),
	)
	err := c.Put(src, it, 512)
	wantFault(t, err, CodeRPC, "fam_put_blocking")
	if !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("put error %q does not say the memory server is unavailable", err)
	}
	if !bytes.Equal(mem[:512], before[:512]) || !bytes.Equal(mem[512+1024:], before[512+1024:]) {
		t.Fatal("a failed put changed bytes outside its range")
	}
	if err := c.Put(src, it, 512); err != nil {
		t.Fatalf("put after the reconnect: %v", err)
	}
	if !bytes.Equal(mem[512:512+1024], src) {
		t.Fatal("the repeated put did not leave the whole payload in the item")
	}

	// Blocking get: garbage in part of dst, then the reset. The item is not
	// changed by it and the next get overwrites all of dst.
	dst := make([]byte, 1024)
	snapshot := bytes.Clone(mem)
	gomock.InOrder(
		dp.EXPECT().Get(item.key, uint64(512), gomock.Len(1024)).DoAndReturn(func(_ transport.Key, _ uint64, d []byte) error {
			for i := range d[:300] {
				d[i] = 0xEE
			}
			return errDropped
		}),
		dp.EXPECT().Get(item.key, uint64(512), gomock.Len(1024)).DoAndReturn(read),
	)
	wantFault(t, c.Get(dst, it, 512), CodeRPC, "fam_get_blocking")
	if !bytes.Equal(mem, snapshot) {
		t.Fatal("a failed get changed the item")
	}
	if err := c.Get(dst, it, 512); err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("get after the reconnect: %v; data right: %v", err, bytes.Equal(dst, src))
	}

	// Non-blocking put: the failure is reported by Quiet, once, with the
	// put's own operation name.
	src2 := fill(256, 9)
	gomock.InOrder(
		dp.EXPECT().PutAsync(item.key, uint64(0), src2).DoAndReturn(func(_ transport.Key, off uint64, b []byte) *transport.Call {
			copy(mem[off:], b[:100])
			return transport.DoneCall(errDropped)
		}),
		dp.EXPECT().PutAsync(item.key, uint64(0), src2).DoAndReturn(func(k transport.Key, off uint64, b []byte) *transport.Call {
			return transport.DoneCall(apply(k, off, b))
		}),
	)
	if err := c.PutNB(src2, it, 0); err != nil {
		t.Fatalf("PutNB reported %v before Quiet", err)
	}
	wantFault(t, c.Quiet(), CodeRPC, "fam_put_nonblocking")
	if err := c.Quiet(); err != nil {
		t.Fatalf("second Quiet reported the old failure again: %v", err)
	}
	if err := c.PutNB(src2, it, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Quiet(); err != nil || !bytes.Equal(mem[:256], src2) {
		t.Fatalf("non-blocking put after the reconnect: %v; data right: %v", err, bytes.Equal(mem[:256], src2))
	}

	// Non-blocking get on another context: its failure belongs to that
	// context's Quiet, not to the default context's.
	c2, err := f.OpenContext()
	if err != nil {
		t.Fatal(err)
	}
	dst2 := make([]byte, 256)
	dp.EXPECT().GetAsync(item.key, uint64(0), gomock.Len(256)).Return(transport.DoneCall(errDropped))
	if err := c2.GetNB(dst2, it, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Quiet(); err != nil {
		t.Fatalf("default context's Quiet reported another context's failure: %v", err)
	}
	wantFault(t, c2.Quiet(), CodeRPC, "fam_get_nonblocking")
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}

	// Atomic: the add reached the server before the reply was lost. The
	// core must not resend it, or the word would be incremented twice.
	binary.LittleEndian.PutUint64(mem[8:], 40)
	dp.EXPECT().Atomic(item.key, uint64(8), amo.Int64, amo.Add, Value{Lo: 2}, Value{}, false).DoAndReturn(
		func(_ transport.Key, off uint64, _ amo.Kind, _ amo.Op, v, _ amo.Value, _ bool) (amo.Value, error) {
			binary.LittleEndian.PutUint64(mem[off:], binary.LittleEndian.Uint64(mem[off:])+v.Lo)
			return amo.Value{}, errDropped
		}).Times(1)
	_, err = c.Atomic(it, 8, amo.Int64, amo.Add, Value{Lo: 2}, Value{}, false)
	wantFault(t, err, CodeRPC, "fam_add_int64")
	if got := binary.LittleEndian.Uint64(mem[8:]); got != 42 {
		t.Fatalf("word after one lost add reply = %d, want 42 (applied exactly once)", got)
	}
}

// TestFaultSlowServer: famd accepts every call and never answers. Each call
// must give up with CodeTimeout after the configured timeout instead of
// hanging, and a timed-out deallocate or destroy must leave the handles
// usable (the core releases them only on a reply).
func TestFaultSlowServer(t *testing.T) {
	const timeout = 200 * time.Millisecond
	ctrl := gomock.NewController(t)
	item := faultItem{name: "item", key: keyNamed("slow"), off: 0, size: 64}
	// hang is famd that has stopped answering: the call ends only when
	// the client's deadline does, as grpc ends it.
	hang := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a control-plane call was made without a deadline")
		}
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	cl := mocks.NewMockFamClient(ctrl)
	gomock.InOrder(
		cl.EXPECT().Lookup(gomock.Any(), gomock.Any()).Return(&pb.ItemReply{Item: item.info()}, nil),
		cl.EXPECT().Lookup(gomock.Any(), gomock.Any()).DoAndReturn(
			func(ctx context.Context, _ *pb.LookupRequest, _ ...grpc.CallOption) (*pb.ItemReply, error) {
				return nil, hang(ctx)
			}),
	)
	cl.EXPECT().CreateRegion(gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, _ *pb.CreateRegionRequest, _ ...grpc.CallOption) (*pb.RegionReply, error) {
			return nil, hang(ctx)
		}).AnyTimes()
	cl.EXPECT().RegionByID(gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, _ *pb.RegionByIDRequest, _ ...grpc.CallOption) (*pb.RegionReply, error) {
			return nil, hang(ctx)
		}).AnyTimes()
	cl.EXPECT().Deallocate(gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, _ *pb.KeyRequest, _ ...grpc.CallOption) (*pb.Reply, error) {
			return nil, hang(ctx)
		}).AnyTimes()
	cl.EXPECT().StatItem(gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, _ *pb.KeyRequest, _ ...grpc.CallOption) (*pb.ItemReply, error) {
			return nil, hang(ctx)
		}).AnyTimes()
	cl.EXPECT().CloseItem(gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, _ *pb.KeyRequest, _ ...grpc.CallOption) (*pb.Reply, error) {
			return nil, hang(ctx)
		}).AnyTimes()
	mem := make([]byte, item.size)
	dp := mocks.NewMockDataPlane(ctrl)
	dp.EXPECT().Put(item.key, gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ transport.Key, off uint64, src []byte) error { copy(mem[off:], src); return nil }).AnyTimes()
	dp.EXPECT().Get(item.key, gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ transport.Key, off uint64, dst []byte) error { copy(dst, mem[off:]); return nil }).AnyTimes()
	dp.EXPECT().Close().Return(nil).AnyTimes()
	f := newFaultFam(t, cl, dp, timeout)
	it := mustLookup(t, f, "item")
	if err := f.Default().Put([]byte("still here"), it, 0); err != nil {
		t.Fatal(err)
	}
	region, err := f.RegionFromGlobal(GlobalDesc{RegionID: 7, Offset: RegionOffset})
	if err != nil {
		t.Fatal(err)
	}

	calls := []struct {
		op string
		fn func() error
	}{
		{"fam_create_region", func() error {
			_, err := f.CreateRegion("r", 1<<20, 0o600, RegionAttr{})
			return err
		}},
		{"fam_lookup", func() error { _, err := f.Lookup("item", "region"); return err }},
		{"fam_stat_region", func() error { _, err := region.Stat(); return err }},
		{"fam_destroy_region", region.Destroy},
		{"fam_stat", func() error { _, err := it.Stat(); return err }},
		{"fam_deallocate", it.Deallocate},
	}
	for _, call := range calls {
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- call.fn() }()
		select {
		case err := <-done:
			el := time.Since(start)
			wantFault(t, err, CodeTimeout, call.op)
			if el < timeout*9/10 || el > 10*timeout {
				t.Errorf("%s gave up after %v, want about %v", call.op, el, timeout)
			}
		case <-time.After(50 * timeout):
			t.Fatalf("%s still waiting after %v with a %v timeout", call.op, 50*timeout, timeout)
		}
	}

	// Neither the destroy nor the deallocate got an answer, so both
	// handles stay open and the item's bytes are intact.
	got := make([]byte, 10)
	if err := f.Default().Get(got, it, 0); err != nil || string(got) != "still here" {
		t.Fatalf("item after a timed-out deallocate: %q, %v", got, err)
	}
	if region.state.Load() == stateClosed {
		t.Fatal("a timed-out destroy released the region handle")
	}
	// Finalize forgets the item at famd; that call is bounded too.
	start := time.Now()
	if err := f.Finalize(); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	if el := time.Since(start); el > 10*timeout {
		t.Fatalf("Finalize against a silent famd took %v", el)
	}
}

// slowMemory serves items whose requests each wait a fixed delay before
// they execute, so that requests on different connections complete in an
// order the test chooses.
type slowMemory struct {
	heap  []byte
	items map[transport.Key]slowItem // read-only once serving
}

type slowItem struct {
	off, size uint64
	delay     time.Duration
	known     bool // false: the key is revoked and answers STALE_KEY
}

func (m *slowMemory) Resolve(k transport.Key) ([]byte, uint8, bool) {
	it, ok := m.items[k]
	if !ok {
		return nil, 0, false
	}
	time.Sleep(it.delay)
	if !it.known {
		return nil, 0, false
	}
	return m.heap[it.off : it.off+it.size : it.off+it.size], transport.RightRead | transport.RightWrite, true
}

// reorderFixture is a real data-plane server over slowMemory, a client
// with one connection per item, and a DataPlane double that passes
// requests to that client (or fails one on the spot) and records the
// order in which their Calls complete.
type reorderFixture struct {
	f     *Fam
	mem   *slowMemory
	items []faultItem

	mu    sync.Mutex
	order []int // item indexes in completion order
	wg    sync.WaitGroup
}

func newReorderFixture(t *testing.T, delays []time.Duration, revoked, lost int) *reorderFixture {
	t.Helper()
	const size = 4096
	rf := &reorderFixture{mem: &slowMemory{heap: make([]byte, size*len(delays)), items: map[transport.Key]slowItem{}}}
	index := map[transport.Key]int{}
	for i, d := range delays {
		fi := faultItem{name: fmt.Sprintf("item%d", i), key: keyNamed(fmt.Sprintf("reorder-%d", i)), off: uint64(i * size), size: size}
		rf.items = append(rf.items, fi)
		rf.mem.items[fi.key] = slowItem{off: fi.off, size: size, delay: d, known: i != revoked}
		index[fi.key] = i
		copy(rf.mem.heap[fi.off:], fill(size, byte(16*i)))
	}
	srv := transport.NewServer(rf.mem, transport.ServerOptions{})
	sock := filepath.Join(t.TempDir(), "data.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	tc, err := transport.Dial("unix", sock, transport.ClientOptions{Conns: len(delays), Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rf.wg.Wait()
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	ctrl := gomock.NewController(t)
	dp := mocks.NewMockDataPlane(ctrl)
	watch := func(key transport.Key, start func() *transport.Call) *transport.Call {
		i := index[key]
		var call *transport.Call
		if i == lost {
			call = transport.DoneCall(errDropped)
		} else {
			call = start()
		}
		rf.wg.Add(1)
		go func() {
			defer rf.wg.Done()
			call.Wait()
			rf.mu.Lock()
			rf.order = append(rf.order, i)
			rf.mu.Unlock()
		}()
		return call
	}
	dp.EXPECT().GetAsync(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(k transport.Key, off uint64, dst []byte) *transport.Call {
			return watch(k, func() *transport.Call { return tc.GetAsync(k, off, dst) })
		}).AnyTimes()
	dp.EXPECT().PutAsync(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(k transport.Key, off uint64, src []byte) *transport.Call {
			return watch(k, func() *transport.Call { return tc.PutAsync(k, off, src) })
		}).AnyTimes()
	dp.EXPECT().Get(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(tc.Get).AnyTimes()
	dp.EXPECT().Close().DoAndReturn(tc.Close).AnyTimes()
	rf.f = newFaultFam(t, lookupClient(ctrl, rf.items...), dp, 60*time.Second)
	return rf
}

// completed waits for the completion recorders and returns the order.
func (rf *reorderFixture) completed() []int {
	rf.wg.Wait()
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return append([]int(nil), rf.order...)
}

// TestFaultReorderedCompletion: non-blocking transfers issued in the order
// 0, 1, 2, 3 complete in the order 3, 2, 1, 0. Quiet waits for the slowest,
// leaves every successful transfer's bytes in place, and reports the
// failure of the earliest-issued failing transfer whatever order the
// failures completed in.
func TestFaultReorderedCompletion(t *testing.T) {
	delays := []time.Duration{300 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond, 0}
	want := []int{3, 2, 1, 0}

	t.Run("get", func(t *testing.T) {
		// Item 1's key is revoked (its STALE_KEY reply comes after 200 ms);
		// item 3's connection drops at once.
		rf := newReorderFixture(t, delays, 1, 3)
		c := rf.f.Default()
		dsts := make([][]byte, len(delays))
		start := time.Now()
		for i := range delays {
			dsts[i] = make([]byte, 4096)
			it := mustLookup(t, rf.f, rf.items[i].name)
			if err := c.GetNB(dsts[i], it, 0); err != nil {
				t.Fatalf("GetNB %d: %v", i, err)
			}
		}
		err := c.Quiet()
		el := time.Since(start)
		// The revoked key (issued second) is reported, not the errDropped
		// connection (issued last but failed first).
		wantFault(t, err, CodeNoPerm, "fam_get_nonblocking")
		if el < delays[0] {
			t.Fatalf("Quiet returned after %v, before the slowest get (%v) could finish", el, delays[0])
		}
		for _, i := range []int{0, 2} {
			if !bytes.Equal(dsts[i], fill(4096, byte(16*i))) {
				t.Errorf("get %d: destination buffer does not hold the item's bytes", i)
			}
		}
		if got := rf.completed(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("completion order %v, want %v: the fixture did not reorder", got, want)
		}
		if err := c.Quiet(); err != nil {
			t.Fatalf("a second Quiet reported %v", err)
		}
	})

	t.Run("put", func(t *testing.T) {
		rf := newReorderFixture(t, delays, -1, -1)
		c := rf.f.Default()
		srcs := make([][]byte, len(delays))
		start := time.Now()
		for i := range delays {
			srcs[i] = fill(4096, byte(100+i))
			it := mustLookup(t, rf.f, rf.items[i].name)
			if err := c.PutNB(srcs[i], it, 0); err != nil {
				t.Fatalf("PutNB %d: %v", i, err)
			}
		}
		if err := c.Quiet(); err != nil {
			t.Fatalf("Quiet: %v", err)
		}
		if el := time.Since(start); el < delays[0] {
			t.Fatalf("Quiet returned after %v, before the slowest put (%v) could finish", el, delays[0])
		}
		// Every put is at the server when Quiet returns. (Read back over
		// the data plane: the server's goroutines wrote the heap.)
		for i, fi := range rf.items {
			got := make([]byte, fi.size)
			if err := c.Get(got, mustLookup(t, rf.f, fi.name), 0); err != nil || !bytes.Equal(got, srcs[i]) {
				t.Errorf("put %d is not in the item after Quiet (read back: %v)", i, err)
			}
		}
		if got := rf.completed(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("completion order %v, want %v: the fixture did not reorder", got, want)
		}
	})
}
