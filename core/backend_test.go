package core

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/mock/gomock"
	"google.golang.org/grpc"

	"github.com/gofam/openfam/core/internal/mocks"
	"github.com/gofam/openfam/core/metadata"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// putHookCatalog runs onPut, when set, each time PutItem has stored an
// item (the allocation then still has to register its handle).
type putHookCatalog struct {
	Catalog
	onPut func()
}

func (c *putHookCatalog) PutItem(it metadata.Item) error {
	err := c.Catalog.PutItem(it)
	if c.onPut != nil {
		c.onPut()
	}
	return err
}

// openEmbedded starts an embedded instance in a temporary directory.
func openEmbedded(t *testing.T) *Fam {
	t.Helper()
	d := t.TempDir()
	o := DefaultOptions()
	o.DataDir, o.ShmDir, o.BackupDir = d+"/data", d+"/shm", d+"/backups"
	o.PEID, o.PECount = 0, 1
	f, err := Initialize(o)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	t.Cleanup(func() { _ = f.Finalize() })
	return f
}

// openItemHandles counts the registered item handles of region id.
func openItemHandles(f *Fam, id uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.regionItemsLocked(id))
}

// TestAllocateRacingDestroy (embedded): one thread destroys a region
// while another allocates in it, the destruction starting just as the
// allocation has written its item to the catalogue. Whichever wins, no
// handle may survive on the destroyed region: either the allocation fails,
// or its handle is released with the region's others (the embedded
// backend registers it in the critical section that wrote the item). Run
// under -race.
func TestAllocateRacingDestroy(t *testing.T) {
	f := openEmbedded(t)
	hc := &putHookCatalog{Catalog: localOf(f).store}
	localOf(f).store = hc
	for i := range 50 {
		name := fmt.Sprintf("race%d", i)
		r, err := f.CreateRegion(name, 1<<20, 0o600, RegionAttr{})
		if err != nil {
			t.Fatal(err)
		}
		other, err := f.LookupRegion(name)
		if err != nil {
			t.Fatal(err)
		}
		destroyed := make(chan error, 1)
		hc.onPut = func() {
			hc.onPut = nil // the catalogue is called under f.mu: no race on the field
			go func() { destroyed <- other.Destroy() }()
		}
		it, aerr := r.Allocate("x", 64, 0o600)
		if err := <-destroyed; err != nil {
			t.Fatalf("iteration %d: destroy: %v", i, err)
		}
		if aerr == nil {
			if _, err := it.Stat(); CodeOf(err) != CodeInvalid {
				t.Fatalf("iteration %d: the handle allocated in a region destroyed meanwhile is still usable: Stat = %v, want CodeInvalid", i, err)
			}
			if _, _, _, ok := it.Local(); ok {
				t.Fatalf("iteration %d: the handle allocated in a destroyed region still maps its bytes", i)
			}
		} else if c := CodeOf(aerr); c != CodeNotFound && c != CodeResource {
			t.Fatalf("iteration %d: allocate: %v, want success or CodeNotFound/CodeResource", i, aerr)
		}
		if n := openItemHandles(f, r.id); n != 0 {
			t.Fatalf("iteration %d: %d item handles stay registered on destroyed region %d", i, n, r.id)
		}
	}
}

// TestAllocateRacingDestroyThroughFamd (famd-served): the region is
// destroyed, through another handle of this program, while famd answers
// the allocation. famd's calls hold no lock, so the registration itself
// must notice: the allocation fails with CodeNotFound, its key is given
// back, and no handle stays registered on the destroyed region. Before,
// the handle was registered open on a region that no longer existed.
func TestAllocateRacingDestroyThroughFamd(t *testing.T) {
	ctrl := gomock.NewController(t)
	const regionID = 7
	item := faultItem{name: "x", key: keyNamed("raced"), off: 4096, size: 64}
	cl := mocks.NewMockFamClient(ctrl)
	cl.EXPECT().RegionByID(gomock.Any(), gomock.Any()).Return(&pb.RegionReply{Region: &pb.RegionInfo{Id: regionID, Name: "region", Size: 1 << 20, Mode: 0o600}}, nil).AnyTimes()
	cl.EXPECT().DestroyRegion(gomock.Any(), gomock.Any()).Return(&pb.Reply{}, nil).Times(1)
	closed := make(chan []byte, 1)
	cl.EXPECT().CloseItem(gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, in *pb.KeyRequest, _ ...grpc.CallOption) (*pb.Reply, error) {
			closed <- in.GetKey()
			return &pb.Reply{}, nil
		}).Times(1)
	dp := mocks.NewMockDataPlane(ctrl)
	dp.EXPECT().Close().Return(nil).AnyTimes()
	f := newFaultFam(t, cl, dp, 10*time.Second)
	r, err := f.RegionFromGlobal(GlobalDesc{RegionID: regionID, Offset: RegionOffset})
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.RegionFromGlobal(GlobalDesc{RegionID: regionID, Offset: RegionOffset})
	if err != nil {
		t.Fatal(err)
	}
	cl.EXPECT().Allocate(gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, _ *pb.AllocateRequest, _ ...grpc.CallOption) (*pb.ItemReply, error) {
			// famd made the item; before its answer arrives, another
			// thread destroys the region.
			if err := other.Destroy(); err != nil {
				t.Errorf("destroy: %v", err)
			}
			return &pb.ItemReply{Item: item.info()}, nil
		})
	it, err := r.Allocate("x", 64, 0o600)
	if CodeOf(err) != CodeNotFound || it != nil {
		t.Fatalf("Allocate in a region destroyed meanwhile = %v, %v; want no handle and CodeNotFound", it, err)
	}
	select {
	case k := <-closed:
		if string(k) != string(item.key[:]) {
			t.Fatalf("CloseItem(%x), want the refused handle's key %x", k, item.key)
		}
	default:
		t.Fatal("the refused handle's key was not given back to famd")
	}
	if n := openItemHandles(f, regionID); n != 0 {
		t.Fatalf("%d item handles stay registered on the destroyed region", n)
	}
	f.mu.Lock()
	indexed := f.keys.get(item.key) != nil
	f.mu.Unlock()
	if indexed {
		t.Fatal("the refused handle's key is still indexed for revocation events")
	}
}
