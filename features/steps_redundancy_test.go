package features

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// ---- redundant regions (issue 16) -------------------------------------------------
//
// The @redundancy scenarios kill memory servers with SIGKILL, so their
// memory servers are famd processes (famd --role memory) of their own,
// joined to a metadata famd in the test process. The famd and famctl
// binaries come from $OPENFAM_BINDIR (make sets it to build/bin) or are
// built once per test process into build/features-bin.

// memProc is one memory famd process of a scenario.
type memProc struct {
	k         int    // 1-based, as the scenarios number them
	dir       string // --data-dir (kept across restarts)
	shm       string // --shm-dir
	sock      string // --socket: the data-plane Unix socket
	base      []string
	cmd       *exec.Cmd
	done      chan struct{} // closed when cmd has exited
	log       string        // the current run's log file
	runs      int
	id        uint64 // memory server id the metadata famd gave it
	ctl, data string // TCP addresses, reused on restart so clients find it again
}

var (
	famBinOnce sync.Once
	famBinDir  string
	famBinErr  error
)

// famBinaries returns the directory holding famd and famctl.
func famBinaries() (string, error) {
	famBinOnce.Do(func() {
		if d := os.Getenv("OPENFAM_BINDIR"); d != "" {
			famBinDir, famBinErr = filepath.Abs(d)
			for _, b := range []string{"famd", "famctl"} {
				if _, err := os.Stat(filepath.Join(famBinDir, b)); err != nil && famBinErr == nil {
					famBinErr = fmt.Errorf("OPENFAM_BINDIR: %v", err)
				}
			}
			return
		}
		famBinDir, famBinErr = filepath.Abs(filepath.Join("..", "build", "features-bin"))
		if famBinErr != nil {
			return
		}
		for _, b := range []string{"famd", "famctl"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(famBinDir, b), "../cmd/"+b).CombinedOutput()
			if err != nil {
				famBinErr = fmt.Errorf("go build ../cmd/%s: %v\n%s", b, err, out)
				return
			}
		}
	})
	return famBinDir, famBinErr
}

// procClusterInstance starts an in-process metadata famd and k memory
// famd processes that join it, then initializes the scenario's instance.
func (w *world) procClusterInstance(k, n, unit string) error {
	servers, err := strconv.Atoi(k)
	if err != nil {
		return err
	}
	block := uint64(64 << 10)
	if n != "" {
		if block, err = parseSize(n, unit); err != nil {
			return err
		}
	}
	bin, err := famBinaries()
	if err != nil {
		return err
	}
	if w.famd != nil {
		return errors.New("the scenario already runs a famd")
	}
	dir := filepath.Join(w.tmp, "cluster")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tok, stok := filepath.Join(w.tmp, "cluster-token"), filepath.Join(w.tmp, "server-token")
	if err := os.WriteFile(tok, []byte(clusterToken+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(stok, []byte(serverToken+"\n"), 0o600); err != nil {
		return err
	}
	meta, err := embed.Start(embed.Options{DataDir: filepath.Join(dir, "meta"), ShmDir: filepath.Join(dir, "meta-shm"),
		BackupDir: filepath.Join(dir, "backups"), TCPAddr: "127.0.0.1:0", Token: clusterToken,
		Role: "metadata", InterleaveSize: block, ServerToken: serverToken, Provider: famdProvider()})
	if err != nil {
		return err
	}
	w.famd = meta
	for i := 1; i <= servers; i++ {
		mdir := filepath.Join(dir, fmt.Sprintf("mem%d", i))
		m := &memProc{k: i, dir: mdir, shm: mdir + "-shm", sock: mdir + ".data.sock",
			base: []string{filepath.Join(bin, "famd"), "--role", "memory", "--join", "unix:" + meta.SocketPath(),
				"--token-file", tok, "--server-token-file", stok}}
		if p := famdProvider(); p != "" {
			// The data-plane axis (provider_test.go): every famd runs it.
			m.base = append(m.base, "--provider", p)
		}
		w.memProcs = append(w.memProcs, m)
		if err := m.start(); err != nil {
			return err
		}
	}
	os.Setenv("OPENFAM_SERVER", "unix:"+meta.SocketPath())
	os.Setenv("OPENFAM_TOKEN_FILE", tok)
	return w.initialize("")
}

var (
	joinedRE = regexp.MustCompile(`joined the metadata famd at \S+ as memory server (\d+)`)
	addrsRE  = regexp.MustCompile(`control gRPC on tcp://([^,\s]+), data plane tcp://(\S+)`)
)

// start runs the memory famd (again: on the same data directory, ports
// and socket) and waits until it has joined the metadata famd.
func (m *memProc) start() error {
	m.runs++
	m.log = fmt.Sprintf("%s.%d.log", m.dir, m.runs)
	args := append([]string{}, m.base...)
	args = append(args, "--data-dir", m.dir, "--shm-dir", m.shm, "--socket", m.sock)
	if m.ctl == "" {
		args = append(args, "--listen", "tcp://127.0.0.1:0")
	} else {
		args = append(args, "--listen", "tcp://"+m.ctl, "--data-listen", m.data)
	}
	logf, err := os.Create(m.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	m.cmd = exec.Command(args[0], args[1:]...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	// Should the test process die, its memory famds go with it.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("memory famd %d: %v", m.k, err)
	}
	m.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) {
		c.Wait()
		removeShmRegions(c.Process.Pid) // a killed famd leaves them
		close(done)
	}(m.cmd, m.done)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(m.log)
		if sm := joinedRE.FindSubmatch(b); sm != nil {
			id, _ := strconv.ParseUint(string(sm[1]), 10, 64)
			if m.id != 0 && id != m.id {
				return fmt.Errorf("memory famd %d rejoined as memory server %d, was %d", m.k, id, m.id)
			}
			m.id = id
			if am := addrsRE.FindSubmatch(b); am != nil && m.ctl == "" {
				m.ctl, m.data = string(am[1]), string(am[2])
			}
			if m.ctl == "" {
				return fmt.Errorf("memory famd %d logged no addresses:\n%s", m.k, b)
			}
			return nil
		}
		select {
		case <-m.done:
			return fmt.Errorf("memory famd %d exited before joining (%v):\n%s", m.k, m.cmd.ProcessState, b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("memory famd %d did not join within 60s:\n%s", m.k, b)
		}
	}
}

// kill ends the memory famd with SIGKILL and waits until it is gone.
func (m *memProc) kill() error {
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 memory famd %d: %v", m.k, err)
	}
	select {
	case <-m.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("memory famd %d still runs 30s after SIGKILL", m.k)
	}
}

// stop ends a running memory famd gracefully (SIGKILL after 15 s).
func (m *memProc) stop() error {
	if m.cmd == nil {
		return nil
	}
	select {
	case <-m.done:
		return nil
	default:
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
		return nil
	case <-time.After(15 * time.Second):
		m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
		return fmt.Errorf("memory famd %d did not stop within 15s of SIGTERM", m.k)
	}
}

// stopMemProcs stops every memory famd process of the scenario.
func (w *world) stopMemProcs() error {
	var errs []error
	for _, m := range w.memProcs {
		errs = append(errs, m.stop())
	}
	w.memProcs = nil
	return errors.Join(errs...)
}

func (w *world) memProc(k string) (*memProc, error) {
	i, err := strconv.Atoi(k)
	if err != nil || i < 1 || i > len(w.memProcs) {
		return nil, fmt.Errorf("the scenario has no memory famd %s", k)
	}
	return w.memProcs[i-1], nil
}

func (w *world) killMem(k string) error {
	m, err := w.memProc(k)
	if err != nil {
		return err
	}
	return m.kill()
}

func (w *world) restartMem(k string) error {
	m, err := w.memProc(k)
	if err != nil {
		return err
	}
	select {
	case <-m.done:
	default:
		return fmt.Errorf("memory famd %s is still running", k)
	}
	return m.start()
}

// ---- famctl servers --json ----------------------------------------------------------

// memState is what famctl servers --json says of one memory server.
type memState struct {
	reachable bool
	state     string // "" when famctl reports none
	stale     float64
	raw       string
}

// famctlServers runs famctl --json servers against the scenario's famd.
func (w *world) famctlServers() (map[uint64]memState, string, error) {
	bin, err := famBinaries()
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "famctl"), "--json", "servers")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, out.String(), fmt.Errorf("famctl --json servers: %v: %s", err, errb.String())
	}
	var doc struct {
		MemoryServers []map[string]any `json:"memory_servers"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		return nil, out.String(), fmt.Errorf("famctl --json servers: %v", err)
	}
	states := map[uint64]memState{}
	for _, s := range doc.MemoryServers {
		id, _ := s["id"].(float64)
		raw, _ := json.Marshal(s)
		st := memState{raw: string(raw)}
		st.reachable, _ = s["reachable"].(bool)
		st.stale, _ = s["stale_regions"].(float64)
		state, _ := s["state"].(string)
		// "up", "down", "rebuilding" (famctl may also print the proto's
		// SERVER_UP style).
		st.state = strings.TrimPrefix(strings.ToLower(state), "server_")
		states[uint64(id)] = st
	}
	return states, out.String(), nil
}

// isDown and isRebuilt read a memory server's state as famctl reports it:
// famd's membership decision "down", and "up" with no stale region once a
// returning server's rebuild has ended (not while it is "rebuilding").
func (s memState) isDown() bool { return !s.reachable && s.state == "down" }
func (s memState) isRebuilt() bool {
	return s.reachable && s.state == "up" && s.stale == 0
}

// famctlShows polls famctl servers --json until memory famd k is in the
// state named, for at most secs seconds.
func (w *world) famctlShows(k, what, secs string) error {
	m, err := w.memProc(k)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(secs)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(n) * time.Second)
	var last string
	for {
		states, out, err := w.famctlServers()
		if err != nil {
			last = err.Error()
		} else {
			st, ok := states[m.id]
			switch {
			case !ok:
				last = fmt.Sprintf("memory server %d missing:\n%s", m.id, out)
			case what == "down" && st.isDown(), what == "rebuilt" && st.isRebuilt():
				return nil
			default:
				last = st.raw
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("famctl servers --json did not show memory famd %s (server %d) %s within %ss; last: %s",
				k, m.id, what, secs, last)
		}
		time.Sleep(200 * time.Millisecond) // a poll interval, not a synchronisation
	}
}

// famctlRegionShows polls famctl regions --json until region name's
// redundancy_state is want, for at most secs seconds.
func (w *world) famctlRegionShows(name, want, secs string) error {
	bin, err := famBinaries()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(secs)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(n) * time.Second)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "famctl"), "--json", "regions").Output()
		cancel()
		var regions []map[string]any
		switch {
		case err != nil:
			last = fmt.Sprintf("famctl --json regions: %v", err)
		case json.Unmarshal(out, &regions) != nil:
			// Also accept {"regions": [...]}.
			var doc struct {
				Regions []map[string]any `json:"regions"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				last = fmt.Sprintf("famctl --json regions: %v: %s", err, out)
			}
			regions = doc.Regions
		}
		for _, r := range regions {
			if r["name"] == name {
				raw, _ := json.Marshal(r)
				last = string(raw)
				if st, _ := r["redundancy_state"].(string); st == want {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("famctl regions --json did not show region %q %s within %ss; last: %s", name, want, secs, last)
		}
		time.Sleep(200 * time.Millisecond) // a poll interval, not a synchronisation
	}
}

// ---- regions with a redundancy level -----------------------------------------------

var redundancyLevels = map[string]core.Redundancy{"DEFAULT": core.RedundancyDefault, "NONE": core.RedundancyNone,
	"RAID1": core.RAID1, "RAID5": core.RAID5}

func (w *world) createRedundantRegion(try, name, n, unit, mode, level string) error {
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	attr := &core.RegionAttr{Redundancy: redundancyLevels[level]}
	r, c := w.b.CreateRegion(name, size, m, attr)
	if c == 0 {
		w.regions[name] = r
	}
	return w.outcome(try, "fam_create_region", c)
}

func (w *world) regionRedundancy(name, want string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	s, c := w.b.StatRegion(r)
	if c != 0 {
		return fmt.Errorf("fam_stat_region: code %d: %s", c, w.b.LastError())
	}
	got := map[core.Redundancy]string{core.RedundancyDefault: "default", core.RedundancyNone: "none",
		core.RAID1: "raid1", core.RAID5: "raid5"}[s.Attr.Redundancy]
	if got != want {
		return fmt.Errorf("region %q has redundancy %q, want %q", name, got, want)
	}
	return nil
}

func (w *world) failsWithEither(a, b string) error {
	ca, ok1 := famCodes[a]
	cb, ok2 := famCodes[b]
	if !ok1 || !ok2 {
		return fmt.Errorf("unknown error name %s or %s", a, b)
	}
	if w.code != ca && w.code != cb {
		return fmt.Errorf("got code %d (%s), want %s (%d) or %s (%d)", w.code, w.b.LastError(), a, ca, b, cb)
	}
	return nil
}

// namesCount checks that the last error names the level (in any case) and
// the number of memory servers it needs, as a number of its own.
func (w *world) namesCount(level, count string) error {
	msg := w.b.LastError()
	if !strings.Contains(strings.ToLower(msg), strings.ToLower(level)) {
		return fmt.Errorf("error message %q does not name %s", msg, level)
	}
	if !regexp.MustCompile(`(^|[^0-9])` + count + `($|[^0-9])`).MatchString(strings.ReplaceAll(msg, level, "")) {
		return fmt.Errorf("error message %q does not name the count %s", msg, count)
	}
	return nil
}

// ---- patterns ------------------------------------------------------------------------

// patternByte is byte off of the item under pattern seed: it depends on
// the absolute offset, so a block read from the wrong place or the wrong
// server shows.
func patternByte(seed uint64, off uint64) byte {
	x := seed ^ (off>>3)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return byte(x >> (8 * (off & 7)))
}

func patternSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func (w *world) putPattern(name, count, off, item string) error {
	n, err1 := strconv.ParseUint(count, 10, 64)
	o, err2 := strconv.ParseUint(off, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	d, err := w.item(item)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(n)
	seed := patternSeed(name)
	for i := range buf {
		buf[i] = patternByte(seed, o+uint64(i))
	}
	return w.outcome("", "fam_put_blocking", w.b.RW(Ctx{}, Put, buf, n, d, o))
}

func (w *world) readingGivesPattern(count, off, item, name string) error {
	n, err1 := strconv.ParseUint(count, 10, 64)
	o, err2 := strconv.ParseUint(off, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	d, err := w.item(item)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(n)
	if c := w.b.RW(Ctx{}, Get, buf, n, d, o); c != 0 {
		return fmt.Errorf("fam_get_blocking failed with code %d: %s", c, w.b.LastError())
	}
	seed := patternSeed(name)
	bad, first := 0, -1
	for i := range buf {
		if buf[i] != patternByte(seed, o+uint64(i)) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d bytes differ from pattern %q, the first at offset %d (got %#x, want %#x)",
			bad, n, name, o+uint64(first), buf[first], patternByte(seed, o+uint64(first)))
	}
	return nil
}

// registerRedundancy registers the steps of redundancy.feature.
func (w *world) registerRedundancy(sc *godog.ScenarioContext) {
	sc.Step(`^an OpenFAM instance served by a metadata famd with (\d+) memory famd process(?:es)?(?: and an interleave size of `+size+`)?$`, w.procClusterInstance)
	sc.Step(`^`+try+`create region `+q+` of `+size+` with mode `+mode+` and (DEFAULT|NONE|RAID1|RAID5) redundancy$`, w.createRedundantRegion)
	sc.Step(`^region `+q+` has redundancy (default|none|raid1|raid5)$`, w.regionRedundancy)
	sc.Step(`^it fails with (FAM_E[A-Z]+) or (FAM_E[A-Z]+)$`, w.failsWithEither)
	sc.Step(`^the error message names (RAID1|RAID5) and the count (\d+)$`, w.namesCount)
	sc.Step(`^I put pattern `+q+` of `+num+` bytes at offset `+num+` of item `+q+`$`, w.putPattern)
	sc.Step(`^reading `+num+` bytes at offset `+num+` of item `+q+` gives pattern `+q+`$`, w.readingGivesPattern)
	sc.Step(`^memory famd `+num+` is killed with SIGKILL$`, w.killMem)
	sc.Step(`^memory famd `+num+` is started again on its data directory$`, w.restartMem)
	sc.Step(`^famctl servers --json shows memory famd `+num+` (down|rebuilt) within `+num+` seconds$`, w.famctlShows)
	sc.Step(`^famctl regions --json shows region `+q+` (ok|degraded|rebuilding) within `+num+` seconds$`, w.famctlRegionShows)
}
