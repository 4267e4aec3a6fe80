package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// TestRedundantRegionsSurviveKill9 runs a metadata famd and three memory
// famds as processes (data planes on TCP with the token and on Unix
// sockets, which the memory servers use between themselves): a RAID1 and
// a RAID5 region survive a memory famd's SIGKILL (reads exact, writes and
// fetch_adds go on), the famd restarts on its data directory at new ports,
// rejoins and is rebuilt by the metadata famd while the client writes, and
// then another memory famd is killed and nothing acknowledged is missing.
func TestRedundantRegionsSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("cluster\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	metaSock := filepath.Join(dir, "meta.sock")
	meta := startFamd(t, "--role", "metadata", "--socket", metaSock, "--data-dir", filepath.Join(dir, "meta"),
		"--shm-dir", filepath.Join(dir, "meta-shm"), "--interleave-size", "64KiB")
	meta.waitLine(t, "serving")
	// startMem starts memory famd k; level "debug" shows its rebuilds.
	startMem := func(k int, level string) *famd {
		d := filepath.Join(dir, fmt.Sprint("mem", k))
		m := startFamd(t, "--role", "memory", "--join", "unix:"+metaSock, "--listen", "tcp://127.0.0.1:0",
			"--token-file", tok, "--socket", d+".data", "--data-dir", d, "--shm-dir", d+"-shm", "--log-level", level)
		m.waitLine(t, "joined the metadata famd")
		return m
	}
	mems := []*famd{startMem(0, "info"), startMem(1, "info"), startMem(2, "info")}

	f, err := core.Initialize(core.Options{Server: "unix:" + metaSock, TokenFile: tok, UID: -1, GID: -1,
		PEID: 0, PECount: 1, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Finalize()
	ctx := f.Default()
	type region struct {
		name    string
		it, ctr *core.Item
		want    []byte
		count   uint64
	}
	var regions []*region
	for _, lv := range []struct {
		name  string
		level core.Redundancy
	}{{"raid1", core.RAID1}, {"raid5", core.RAID5}} {
		r, err := f.CreateRegion(lv.name, 4<<20, 0o600, core.RegionAttr{Redundancy: lv.level, Memory: core.Persistent})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Allocate("data", 1<<20, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		ctr, err := r.Allocate("ctr", 4096, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		rg := &region{name: lv.name, it: it, ctr: ctr, want: make([]byte, 1<<20)}
		for i := range rg.want {
			rg.want[i] = byte(i*31 + i>>12)
		}
		if err := ctx.Put(rg.want, it, 0); err != nil {
			t.Fatal(err)
		}
		regions = append(regions, rg)
	}
	work := func(stage string, seed int) {
		t.Helper()
		for _, rg := range regions {
			got := make([]byte, len(rg.want))
			if err := ctx.Get(got, rg.it, 0); err != nil || !bytes.Equal(got, rg.want) {
				t.Fatalf("%s: %s reads back wrong (%v)", stage, rg.name, err)
			}
			off := uint64(seed*70001) % (1<<20 - 300<<10)
			for i := uint64(0); i < 300<<10; i++ {
				rg.want[off+i] = byte(int(i) + seed)
			}
			if err := ctx.Put(rg.want[off:off+300<<10], rg.it, off); err != nil {
				t.Fatalf("%s: %s put: %v", stage, rg.name, err)
			}
			for i := 0; i < 20; i++ {
				old, err := ctx.Atomic(rg.ctr, 0, amo.Uint64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true)
				if err != nil || old.Lo != rg.count {
					t.Fatalf("%s: %s fetch_add: %d %v, want %d", stage, rg.name, old.Lo, err, rg.count)
				}
				rg.count++
			}
		}
	}
	work("healthy", 1)
	kill := func(k int) {
		if err := mems[k].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		mems[k].cmd.Wait()
	}
	kill(1)
	work("memory famd 1 killed", 2)
	work("memory famd 1 still down", 3)
	mems[1] = startMem(1, "debug")
	meta.waitLine(t, "rebuilding its copies of 2 redundant regions")
	work("memory famd 1 back", 4)
	// The rebuild ends (data and mirror, data and parity segments); then
	// memory famd 2 goes.
	waitRebuilt := func() {
		deadline := time.Now().Add(120 * time.Second)
		for n := 0; n < 4; {
			select {
			case l, ok := <-mems[1].lines:
				if !ok {
					t.Fatal("memory famd 1 exited")
				}
				mems[1].log.WriteString(l + "\n")
				if bytes.Contains([]byte(l), []byte("segment rebuilt")) {
					n++
				}
			case <-time.After(time.Until(deadline)):
				t.Fatalf("memory famd 1 did not log 4 rebuilt segments within 120s:\n%s", mems[1].log.String())
			}
		}
	}
	waitRebuilt()
	go func() {
		for range mems[1].lines { // its debug log must not fill the pipe
		}
	}()
	work("memory famd 1 rebuilt", 5)
	kill(2)
	work("memory famd 2 killed after the rebuild", 6)
	for _, rg := range regions {
		b := make([]byte, 8)
		if err := ctx.Get(b, rg.ctr, 0); err != nil || binary.LittleEndian.Uint64(b) != rg.count {
			t.Fatalf("%s: counter %d (%v), want %d", rg.name, binary.LittleEndian.Uint64(b), err, rg.count)
		}
	}
}
