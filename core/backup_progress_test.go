package core_test

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// gatedProxy forwards Unix-socket connections to a famd, holding every byte
// from the client while the gate is shut: a famd that is slow to answer,
// made deterministic.
type gatedProxy struct {
	path string
	mu   sync.Mutex
	cond *sync.Cond
	shut bool
}

func startGatedProxy(t *testing.T, target string) *gatedProxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "gate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &gatedProxy{path: filepath.Join(dir, "s")}
	p.cond = sync.NewCond(&p.mu)
	l, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		p.set(false)
		conns.Wait()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("unix", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go func() { defer conns.Done(); io.Copy(c, s); c.Close() }()
			go func() {
				defer conns.Done()
				defer s.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						p.mu.Lock()
						for p.shut {
							p.cond.Wait()
						}
						p.mu.Unlock()
						if _, werr := s.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// set shuts (true) or opens (false) the gate.
func (p *gatedProxy) set(shut bool) {
	p.mu.Lock()
	p.shut = shut
	p.mu.Unlock()
	p.cond.Broadcast()
}

// TestBackupProgressThroughFamd: against a famd, fam_backup and fam_restore
// return while the copy runs (famd has not even seen the request here) and
// fam_progress counts it until it completes; before, both blocked for the
// whole copy and fam_progress never saw it.
func TestBackupProgressThroughFamd(t *testing.T) {
	d, err := embed.Start(embed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	p := startGatedProxy(t, d.SocketPath())
	o := core.DefaultOptions()
	o.Server, o.PEID, o.PECount, o.Timeout = "unix:"+p.path, 0, 1, 60*time.Second
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Finalize()
	r, err := f.CreateRegion("progress", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 64<<10, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx := f.Default()

	for _, step := range []struct {
		name  string
		start func() (*core.Wait, error)
	}{
		{"fam_backup", func() (*core.Wait, error) { return f.Backup(it, "snap") }},
		{"fam_restore", func() (*core.Wait, error) { return f.Restore("snap", it) }},
	} {
		if n := ctx.Progress(); n != 0 {
			t.Fatalf("before %s: fam_progress %d, want 0", step.name, n)
		}
		// Each first checks, with famd, whether the backup exists (a taken
		// name, an absent backup is the call's error); the copy is held
		// after.
		f.AfterBackupCheck(func() { p.set(true) })
		type started struct {
			w   *core.Wait
			err error
		}
		got := make(chan started, 1)
		go func() {
			w, err := step.start()
			got <- started{w, err}
		}()
		var s started
		select {
		case s = <-got:
		case <-time.After(60 * time.Second):
			p.set(false)
			<-got
			t.Fatalf("%s did not return within 60s while famd had not answered: it blocks for the whole copy", step.name)
		}
		if s.err != nil {
			p.set(false)
			t.Fatalf("%s: %v", step.name, s.err)
		}
		// The request is held at the gate: the copy cannot have completed.
		if n := ctx.Progress(); n != 1 {
			p.set(false)
			t.Fatalf("%s running: fam_progress %d, want 1", step.name, n)
		}
		p.set(false)
		if err := s.w.Wait(); err != nil {
			t.Fatalf("%s: wait: %v", step.name, err)
		}
		if err := ctx.Quiet(); err != nil {
			t.Fatal(err)
		}
		if n := ctx.Progress(); n != 0 {
			t.Fatalf("after %s: fam_progress %d, want 0", step.name, n)
		}
	}

	// Errors from famd still reach the caller: a taken name it lists at
	// the call, any other through the Wait.
	w, err := f.Backup(it, "snap")
	if err == nil {
		err = w.Wait()
	}
	var fe *core.Error
	if !errors.As(err, &fe) || fe.Code != core.CodeExists {
		t.Fatalf("backing up to a taken name: %v, want FAM_EEXIST", err)
	}
}
