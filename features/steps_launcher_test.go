package features

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core"
)

// ---- launcher -------------------------------------------------------------------------

// aJob starts a famd and a job of n PEs around it: this backend's instance
// is PE 0 (configured through FAMRUN_* as famrun configures a PE), the
// others are Go clients of the same famd with their own ranks.
func (w *world) aJob(job, n string) error {
	if err := w.startFamd(""); err != nil {
		return err
	}
	return w.startJob(job, n)
}

// aStripedJob is aJob around a metadata famd with k memory servers, the
// shape of cluster famrun --servers k starts, built in this process (with
// 64 KiB interleave blocks instead of famd's 1 MiB default, so that small
// items span servers) so that the scenario does not depend on famrun.
func (w *world) aStripedJob(k, job, n string) error {
	servers, err := strconv.Atoi(k)
	if err != nil {
		return err
	}
	if err := w.startCluster(servers, 64<<10); err != nil {
		return err
	}
	return w.startJob(job, n)
}

// startJob configures PE 0 (this instance) and starts PEs 1..n-1 against
// the famd that OPENFAM_SERVER names.
func (w *world) startJob(job, n string) error {
	size, err := strconv.Atoi(n)
	if err != nil {
		return err
	}
	os.Setenv("FAMRUN_JOB", job)
	os.Setenv("FAMRUN_RANK", "0")
	os.Setenv("FAMRUN_SIZE", n)
	if err := w.initialize(""); err != nil {
		return err
	}
	for rank := 1; rank < size; rank++ {
		o := core.DefaultOptions()
		o.PEID, o.PECount = rank, size
		f, err := core.Initialize(o)
		if err != nil {
			return fmt.Errorf("PE %d: %v", rank, err)
		}
		w.pes = append(w.pes, f)
	}
	return nil
}

func (w *world) peIs(id, n string) error {
	i, c, code := w.b.PE()
	if code != 0 {
		return fmt.Errorf("fam_get_option: code %d: %s", code, w.b.LastError())
	}
	if strconv.Itoa(i) != id || strconv.Itoa(c) != n {
		return fmt.Errorf("PE_ID %d and PE_COUNT %d, want %s and %s", i, c, id, n)
	}
	return nil
}

func (w *world) barrier(try string) error { return w.outcome(try, "fam_barrier_all", w.b.Barrier()) }

// ranksThenBarrier has every PE write its rank as a uint64 at offset
// 8*rank of the item, then meet at the barrier, then check that it sees
// every rank. PE k waits k*30 ms before writing, so a barrier that let a
// PE through early would show it zeros.
func (w *world) ranksThenBarrier(name, region string) error {
	size := len(w.pes) + 1
	check := func(read func(off uint64) (uint64, error)) error {
		for r := 0; r < size; r++ {
			v, err := read(uint64(8 * r))
			if err != nil {
				return err
			}
			if v != uint64(r)+100 {
				return fmt.Errorf("slot %d holds %d after the barrier, want %d", r, v, r+100)
			}
		}
		return nil
	}
	errs := make(chan error, size)
	var wg sync.WaitGroup
	for i, f := range w.pes {
		rank := i + 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			it, err := f.Lookup(name, region)
			if err != nil {
				errs <- fmt.Errorf("PE %d: %v", rank, err)
				return
			}
			time.Sleep(time.Duration(rank) * 30 * time.Millisecond)
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(rank)+100)
			if err := f.Default().Put(b[:], it, uint64(8*rank)); err != nil {
				errs <- fmt.Errorf("PE %d: %v", rank, err)
				return
			}
			if err := f.Barrier(); err != nil {
				errs <- fmt.Errorf("PE %d: barrier: %v", rank, err)
				return
			}
			errs <- check(func(off uint64) (uint64, error) {
				if err := f.Default().Get(b[:], it, off); err != nil {
					return 0, err
				}
				return binary.LittleEndian.Uint64(b[:]), nil
			})
		}()
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(8)
	binary.LittleEndian.PutUint64(buf, 100)
	if c := w.b.RW(Ctx{}, Put, buf, 8, d, 0); c != 0 {
		return fmt.Errorf("PE 0: put: code %d: %s", c, w.b.LastError())
	}
	if c := w.b.Barrier(); c != 0 {
		return fmt.Errorf("PE 0: fam_barrier_all: code %d: %s", c, w.b.LastError())
	}
	errs <- check(func(off uint64) (uint64, error) {
		if c := w.b.RW(Ctx{}, Get, buf, 8, d, off); c != 0 {
			return 0, fmt.Errorf("PE 0: get: code %d: %s", c, w.b.LastError())
		}
		return binary.LittleEndian.Uint64(buf), nil
	})
	wg.Wait()
	close(errs)
	var all []error
	for e := range errs {
		all = append(all, e)
	}
	return errors.Join(all...)
}

func (w *world) embeddedJob(n string) error {
	os.Setenv("FAMRUN_RANK", "0")
	os.Setenv("FAMRUN_SIZE", n)
	os.Setenv("FAMRUN_JOB", "embedded-job")
	return w.initialize("")
}

// registerLauncher registers the launcher steps (famrun jobs, PE ids, barriers).
func (w *world) registerLauncher(sc *godog.ScenarioContext) {
	sc.Step(`^a famd running job `+q+` of `+num+` PEs, where this instance is PE 0$`, w.aJob)
	sc.Step(`^a famd with `+num+` memory servers running job `+q+` of `+num+` PEs, where this instance is PE 0$`, w.aStripedJob)
	sc.Step(`^PE_ID is `+num+` and PE_COUNT is `+num+`$`, w.peIs)
	sc.Step(`^`+try+`call fam_barrier_all$`, w.barrier)
	sc.Step(`^every PE writes its rank plus 100 into item `+q+` of region `+q+`, calls fam_barrier_all and then reads every rank$`, w.ranksThenBarrier)
	sc.Step(`^an OpenFAM instance without famd in a job of `+num+` PEs$`, w.embeddedJob)
}
