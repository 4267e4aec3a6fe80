package fabric

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/transport"
)

// procTicks is process pid's utime+stime in clock ticks (/proc/PID/stat;
// "self" for this process).
func procTicks(t testing.TB, pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Skipf("SKIP: no /proc/%s/stat: %v", pid, err)
	}
	// Fields after the command name, which ends at the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime (field 14)
	s, _ := strconv.ParseInt(f[12], 10, 64) // stime (field 15)
	return u + s
}

// cpuTicks is this process's utime+stime in clock ticks.
func cpuTicks(t testing.TB) int64 { return procTicks(t, "self") }

// idleSeconds is how long the idle tests measure: 3 s, or
// FABRIC_IDLE_SECONDS (the bench script uses 10).
func idleSeconds() int {
	if s, err := strconv.Atoi(os.Getenv("FABRIC_IDLE_SECONDS")); err == nil && s > 0 {
		return s
	}
	return 3
}

// idleLimit is the most CPU (percent of a core) an idle endpoint, or
// pair, may use in the idle tests. CPU time, unlike wall time, hardly
// grows with the host's load; the race detector makes each access of a
// goroutine that does wake up cost several times more.
func idleLimit() float64 {
	if raceOn {
		return 3
	}
	return 1
}

// TestIdleCPU: an open server and client endpoint pair, with a key
// exposed and used once, costs (near) no CPU while idle: under 1% of a
// core over the measurement (shm's polling progress cost about 2% before
// it slept on its doorbell, bell.go). Where the progress polls (shm) its
// goroutine must also sleep on the doorbell rather than wake on a timer:
// at most once per bellSweep per endpoint (a few more allowed).
func TestIdleCPU(t *testing.T) {
	secs := idleSeconds()
	forEach(t, func(t *testing.T, prov string) {
		pr := openPair(t, prov, Options{})
		k, _ := pr.ctl.add(4096, transport.RightRead|transport.RightWrite)
		if err := pr.p.Get(k, 0, make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		// Let the polling progress (shm) reach its idle pace first.
		time.Sleep(50 * time.Millisecond)
		sleeps := pr.srv.sleeps.Load() + pr.cli.sleeps.Load()
		before, start := cpuTicks(t), time.Now()
		time.Sleep(time.Duration(secs) * time.Second)
		used := float64(cpuTicks(t)-before) / 100 // USER_HZ is 100 on Linux
		el := time.Since(start)
		pct := 100 * used / el.Seconds()
		sleeps = pr.srv.sleeps.Load() + pr.cli.sleeps.Load() - sleeps
		t.Logf("provider %s: idle endpoint pair used %.2f s CPU in %d s: %.2f%% of a core (%d doorbell sleeps)", prov, used, secs, pct, sleeps)
		if limit := idleLimit(); pct >= limit {
			t.Errorf("provider %s: idle CPU %.2f%%, want < %.0f%%", prov, pct, limit)
		}
		if pr.srv.pollOnly {
			if pr.srv.bell == nil || pr.cli.bell == nil {
				t.Fatalf("provider %s: polling progress without a doorbell (see the endpoints' log lines)", prov)
			}
			if most := 2*int64(el/bellSweep+1) + 10; sleeps > most {
				t.Errorf("provider %s: the idle progress goroutines slept %d times in %v, want at most %d (one sleep per %v each): they poll while idle", prov, sleeps, el.Round(time.Millisecond), most, bellSweep)
			}
		}
	})
}

// TestDoorbellWakesParkedServer: on shm, a server endpoint idle for a
// while sleeps on its doorbell with no timeout worth the name (bellSweep
// is an hour here), and a client's get wakes it as it is posted: it
// completes at once rather than at the operation's timeout.
func TestDoorbellWakesParkedServer(t *testing.T) {
	sweep := bellSweep
	bellSweep = time.Hour                   // before the endpoints' goroutines start
	t.Cleanup(func() { bellSweep = sweep }) // after they have stopped
	pr := openPair(t, "shm", Options{Timeout: 20 * time.Second})
	if !pr.srv.pollOnly {
		t.Skip("SKIP: shm's CQ has a wait fd here; the progress goroutine does not poll")
	}
	if pr.p.bell == nil {
		t.Fatal("the client has no mapping of the server's doorbell")
	}
	k, mem := pr.ctl.add(4096, transport.RightRead|transport.RightWrite)
	copy(mem, "doorbell")
	buf := make([]byte, 8)
	if err := pr.p.Get(k, 0, buf); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		parked := false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if pr.srv.bell.word.Load() == bellParked && !pr.srv.inFlight() {
				parked = true
				break
			}
		}
		if !parked {
			t.Fatal("the idle server endpoint did not sleep on its doorbell within 10 s")
		}
		time.Sleep(20 * time.Millisecond) // well into its sleep
		rings := pr.cli.postRings.Load()
		start := time.Now()
		if err := pr.p.Get(k, 0, buf); err != nil {
			t.Fatalf("round %d: get from a sleeping server: %v", round, err)
		}
		took := time.Since(start)
		if string(buf) != "doorbell" {
			t.Fatalf("round %d: got %q", round, buf)
		}
		if pr.cli.postRings.Load() == rings {
			// (The client's watchdog would ring too, later: it rings
			// the servers of operations in flight as it looks.)
			t.Fatalf("round %d: the get completed (in %v) without its post ringing the server's doorbell", round, took)
		}
		t.Logf("round %d: first get after the server slept: %v", round, took)
	}
}

// TestBellOrdering: a ring between park and sleep is not lost (the
// sleep returns at once, rung), a ring on an awake bell issues no wake,
// and a bell's file goes with its owner's close.
func TestBellOrdering(t *testing.T) {
	dir := bellDir
	bellDir = t.TempDir()
	t.Cleanup(func() { bellDir = dir })
	addr := []byte("fi_shm://test:0:0\x00")
	own, err := createBell(addr)
	if err != nil {
		t.Fatal(err)
	}
	peer := openBell(addr)
	if peer == nil {
		t.Fatal("openBell found no doorbell")
	}
	peer.ring()
	if peer.woken.Load() != 0 {
		t.Fatal("a ring on an awake bell issued a wake")
	}
	own.park()
	peer.ring()
	start := time.Now()
	if !own.sleep(time.Hour) {
		t.Fatal("sleep after a ring did not report it")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("sleep after a ring waited")
	}
	own.park()
	if own.sleep(time.Millisecond) {
		t.Fatal("a sleep that timed out reported a ring")
	}
	done := make(chan bool)
	own.park()
	go func() { done <- own.sleep(time.Hour) }()
	time.Sleep(10 * time.Millisecond) // usually asleep by now; either way it must end
	peer.ring()
	select {
	case rung := <-done:
		if !rung {
			t.Fatal("a rung sleep reported a timeout")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ring did not wake the sleeper")
	}
	peer.close()
	own.close()
	if _, err := os.Stat(bellPath(addr)); !os.IsNotExist(err) {
		t.Fatalf("the owner's close left its doorbell file: %v", err)
	}
}

// remoteCtl is the control path to a server endpoint in another process,
// which printed its one key's registration.
type remoteCtl struct {
	rkey, base, size uint64
}

func (c *remoteCtl) FabricKey(transport.Key) (rkey, base, size uint64, rights uint8, err error) {
	return c.rkey, c.base, c.size, transport.RightRead | transport.RightWrite, nil
}
func (*remoteCtl) Atomic(transport.Key, uint64, amo.Kind, amo.Op, amo.Value, amo.Value, bool) (amo.Value, error) {
	return amo.Value{}, fmt.Errorf("not here")
}
func (*remoteCtl) GatherIndexed(transport.Key, []byte, []uint64, uint64) error {
	return fmt.Errorf("not here")
}
func (*remoteCtl) ScatterIndexed(transport.Key, []byte, []uint64, uint64) error {
	return fmt.Errorf("not here")
}
func (*remoteCtl) Close() error { return nil }

// idleServerEnv makes the test binary a server endpoint process for
// TestIdleCPUProcesses: it exposes one item, prints its address and
// registration, and stays until its stdin closes.
const idleServerEnv = "FABRIC_IDLE_SERVER"

func init() {
	prov := os.Getenv(idleServerEnv)
	if prov == "" {
		return
	}
	e, err := Open(prov, Options{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	mem := make([]byte, 4096)
	copy(mem, "far mem!")
	rkey, base, err := e.Expose(transport.Key{1}, mem, transport.RightRead|transport.RightWrite)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Printf("SERVER %x %d %d %d\n", e.Addr(), rkey, base, len(mem))
	io.Copy(io.Discard, os.Stdin)
	e.Close()
	os.Exit(0)
}

// TestIdleCPUProcesses: a server endpoint (as in famd) and a client (as
// in a PE) in two processes, each measured on its own (/proc/PID/stat)
// while idle, stay under 1% of a core; the first get after an idle spell
// completes promptly (it rings the server's doorbell on shm: well under
// the 1 s a sleep without a ring lasts) beside a stream's gets.
func TestIdleCPUProcesses(t *testing.T) {
	secs := idleSeconds()
	forEach(t, func(t *testing.T, prov string) {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), idleServerEnv+"="+prov)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close()
			cmd.Wait()
		})
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("server process: %v", err)
		}
		var addrHex string
		ctl := &remoteCtl{}
		if _, err := fmt.Sscanf(line, "SERVER %s %d %d %d", &addrHex, &ctl.rkey, &ctl.base, &ctl.size); err != nil {
			t.Skipf("SKIP provider %s: server process: %s", prov, strings.TrimSpace(line))
		}
		var addr []byte
		fmt.Sscanf(addrHex, "%x", &addr)
		cli, err := Open(prov, Options{Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		p, err := cli.Plane(addr, ctl)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		buf := make([]byte, 8)
		if err := p.Get(transport.Key{1}, 0, buf); err != nil || string(buf) != "far mem!" {
			t.Fatalf("get: %q, %v", buf, err)
		}
		time.Sleep(50 * time.Millisecond)
		spid := strconv.Itoa(cmd.Process.Pid)
		s0, c0, start := procTicks(t, spid), cpuTicks(t), time.Now()
		time.Sleep(time.Duration(secs) * time.Second)
		s1, c1 := procTicks(t, spid), cpuTicks(t)
		el := time.Since(start).Seconds()
		spct, cpct := float64(s1-s0)/el, float64(c1-c0)/el // ticks are 10 ms: /100*100
		// First gets after idle spells (FABRIC_IDLE_GAP, 200 ms unless
		// set), beside a stream's.
		gap := 200 * time.Millisecond
		if g, err := time.ParseDuration(os.Getenv("FABRIC_IDLE_GAP")); err == nil && g > 0 {
			gap = g
		}
		var first []time.Duration
		for i := 0; i < 5; i++ {
			time.Sleep(gap)
			st := time.Now()
			if err := p.Get(transport.Key{1}, 0, buf); err != nil {
				t.Fatal(err)
			}
			first = append(first, time.Since(st))
		}
		stream := make([]time.Duration, 2000)
		for i := range stream {
			st := time.Now()
			if err := p.Get(transport.Key{1}, 0, buf); err != nil {
				t.Fatal(err)
			}
			stream[i] = time.Since(st)
		}
		med := func(d []time.Duration) time.Duration {
			d = append([]time.Duration(nil), d...)
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			return d[len(d)/2]
		}
		t.Logf("provider %s: idle over %d s: server process %.2f%%, client process %.2f%% of a core; 8 B get after %v idle: median %v (max %v), in a stream: median %v",
			prov, secs, spct, cpct, gap, med(first), slicesMax(first), med(stream))
		limit := idleLimit()
		if spct >= limit || cpct >= limit {
			t.Errorf("provider %s: idle CPU: server %.2f%%, client %.2f%%, want each < %.0f%%", prov, spct, cpct, limit)
		}
		if m := med(first); m > 300*time.Millisecond {
			t.Errorf("provider %s: the first get after an idle spell took %v (median of 5): the server was not woken", prov, m)
		}
	})
}

func slicesMax(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = max(m, x)
	}
	return m
}
