package fabric

import (
	"bytes"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofam/openfam/core/transport"
)

// TestDevice: Options.Device (OpenFAM's if_device) picks the fabric
// domain through fi_getinfo's hints, and the endpoint moves bytes on it;
// a device the provider has no domain of fails Open with the name asked
// and the domains there are.
func TestDevice(t *testing.T) {
	for _, prov := range []string{"sockets", "tcp;ofi_rxm"} {
		t.Run(prov, func(t *testing.T) {
			pr := openPair(t, prov, Options{Device: "lo", Node: "127.0.0.1"})
			for _, e := range []*Endpoint{pr.srv, pr.cli} {
				if e.Domain() != "lo" {
					t.Fatalf("%s: Device lo opened domain %q", prov, e.Domain())
				}
			}
			k, _ := pr.ctl.add(4096, transport.RightRead|transport.RightWrite)
			want := pattern(4096, 3)
			if err := pr.p.Put(k, 0, want); err != nil {
				t.Fatalf("%s: put on domain lo: %v", prov, err)
			}
			got := make([]byte, len(want))
			if err := pr.p.Get(k, 0, got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: get on domain lo: %v (equal %v)", prov, err, bytes.Equal(got, want))
			}

			_, err := Open(prov, Options{Device: "nosuchdev9"})
			if err == nil {
				t.Fatalf("%s: Open with a device the provider lacks succeeded", prov)
			}
			t.Logf("%s: %v", prov, err)
			if errors.Is(err, ErrNoLibfabric) || !strings.Contains(err.Error(), `"nosuchdev9"`) || !strings.Contains(err.Error(), "lo") {
				t.Fatalf("%s: the error should name the device asked and the domains there are: %v", prov, err)
			}
		})
	}
}

// TestShmIgnoresNode: every famd passes its listening host as Options.Node;
// shm named its region after it, so the second of two famds on one host
// failed with EBUSY (two memory famds of a job). shm ignores the node, and
// two server processes with the same node both open, at addresses of
// their own.
func TestShmIgnoresNode(t *testing.T) {
	e, err := Open("shm", Options{})
	if err != nil {
		t.Skipf("SKIP provider shm: not available here: %v", err)
	}
	e.Close()
	t.Setenv("FABRIC_HELPER_NODE", "127.0.0.1")
	a, _ := startServerChild(t, "shm")
	b, _ := startServerChild(t, "shm") // fails here without the fix
	if bytes.Equal(a, b) {
		t.Fatalf("two shm servers share the address %q", a)
	}
}

// TestShmResetRetriesOthers: while a reader streams gets of one key on
// shm, another key is withdrawn behind the Plane's back and read: that read
// fails with ErrStaleKey, the endpoint is reset, and the reader's gets
// caught in flight by the reset are retried: every one of them succeeds
// with the right bytes.
func TestShmResetRetriesOthers(t *testing.T) {
	pr := openPair(t, "shm", Options{Timeout: 10 * time.Second})
	ka, mem := pr.ctl.add(64<<10, transport.RightRead|transport.RightWrite)
	copy(mem, pattern(len(mem), 9))
	kb, _ := pr.ctl.add(4096, transport.RightRead|transport.RightWrite)
	buf := make([]byte, 256)
	if err := pr.p.Get(kb, 0, buf); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 1)
	var gets atomic.Int64
	go func() {
		got := make([]byte, len(mem))
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if err := pr.p.Get(ka, 0, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, mem) {
				errs <- errors.New("a get returned other bytes")
				return
			}
			gets.Add(1)
		}
	}()
	pr.srv.Withdraw(kb)
	err := pr.p.Get(kb, 0, buf)
	// The reader goes on on the new endpoint.
	g0, until := gets.Load(), time.Now().Add(5*time.Second)
	for gets.Load() < g0+3 && time.Now().Before(until) && len(errs) == 0 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	if rerr := <-errs; rerr != nil {
		t.Fatalf("the reader's get across the reset: %v", rerr)
	}
	if !errors.Is(err, transport.ErrStaleKey) {
		t.Fatalf("read with a withdrawn key: %v, want ErrStaleKey", err)
	}
	if pr.cli.Resets() < 1 {
		t.Fatal("the endpoint was not reset")
	}
	t.Logf("shm: %d gets of 64 KiB meanwhile, %d resets", gets.Load(), pr.cli.Resets())
}

// TestShmResetAfterDeadline: an operation refused on shm whose deadline
// passes before the watchdog looks still holds the endpoint: the waiter
// hears of the timeout, and the endpoint is reset all the same, so that
// the next operations complete. (The timeout is shorter than probeAfter;
// on a loaded machine an operation may miss it for other reasons, so the
// ones that must succeed are tried for up to 10 s.)
func TestShmResetAfterDeadline(t *testing.T) {
	pr := openPair(t, "shm", Options{Timeout: probeAfter / 2})
	k, _ := pr.ctl.add(4096, transport.RightRead|transport.RightWrite)
	buf := make([]byte, 256)
	eventually := func(what string, f func() error) {
		t.Helper()
		var err error
		for until := time.Now().Add(10 * time.Second); time.Now().Before(until); {
			if err = f(); err == nil {
				return
			}
		}
		t.Fatalf("%s: %v", what, err)
	}
	eventually("get before the withdrawal", func() error { return pr.p.Get(k, 0, buf) })
	resets := pr.cli.Resets()
	pr.srv.Withdraw(k)
	if err := pr.p.Get(k, 0, buf); err == nil {
		t.Fatal("a read with a withdrawn key succeeded")
	}
	eventually("waiting for the reset", func() error {
		if pr.cli.Resets() == resets {
			time.Sleep(5 * time.Millisecond)
			return errors.New("the endpoint was not reset after the refused operation's deadline")
		}
		return nil
	})
	eventually("put after the reset", func() error { return pr.p.Put(k, 0, buf) })
}
