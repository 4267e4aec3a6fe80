package features

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

// world is one scenario's state: its store, its famd, the instance under
// test and the handles the scenario named.
type world struct {
	b        Backend
	newB     func() Backend
	tmp      string
	famd     *embed.Famd
	famdOpts embed.Options
	mems     []*embed.Memory // the memory servers of a multi-server famd
	// memProcs are memory famds run as processes of their own (see
	// steps_redundancy_test.go), which a scenario may kill.
	memProcs []*memProc
	inited   bool
	// tcpIdentity is the identity a TCP famd gives every client (nil:
	// famd's own, the process's).
	tcpIdentity *rpc.Identity
	// owner is another user's client that owns what the scenario's
	// instance uses (see owner_steps_test.go), or nil.
	owner *ownerState

	regions map[string]Handle
	items   map[string]Handle
	ctxs    map[string]Handle
	bufs    map[string][]byte
	globals map[string]core.GlobalDesc
	maps    map[string][]byte
	// lastLong is the region the last "whose name is N bytes" step made.
	lastLong string
	wait     Handle
	pes      []*core.Fam // the other PEs of a launcher scenario
	code     int         // the last tried call's FAM_E* code
	returned amo.Value   // the last fetching atomic's result
	retKind  amo.Kind
}

// env lists the variables a scenario may set; each is cleared before and
// after it so that no scenario sees another's configuration.
var env = []string{"OPENFAM_DATA_DIR", "OPENFAM_SHM_DIR", "OPENFAM_BACKUP_DIR", "OPENFAM_SERVER",
	"OPENFAM_TOKEN_FILE", "OPENFAM_DEFAULT_MEMORY_TYPE", "OPENFAM_TIMEOUT", "FAMRUN_JOB", "FAMRUN_RANK",
	"FAMRUN_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID",
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OPENFAM_PE_CONFIG", "OPENFAM_PERSIST", "OPENFAM_PERSIST_INTERVAL",
	"OPENFAM_PROVIDER"}

func (w *world) setup() error {
	for _, k := range env {
		os.Unsetenv(k)
	}
	tmp, err := os.MkdirTemp("", "famfeat-")
	if err != nil {
		return err
	}
	w.tmp = tmp
	os.Setenv("OPENFAM_DATA_DIR", filepath.Join(tmp, "data"))
	os.Setenv("OPENFAM_SHM_DIR", filepath.Join(tmp, "shm"))
	os.Setenv("OPENFAM_BACKUP_DIR", filepath.Join(tmp, "backups"))
	w.regions, w.items, w.ctxs = map[string]Handle{}, map[string]Handle{}, map[string]Handle{}
	w.bufs, w.globals, w.maps = map[string][]byte{}, map[string]core.GlobalDesc{}, map[string][]byte{}
	return nil
}

func (w *world) teardown() error {
	var errs []error
	if w.inited {
		if c := w.b.Finalize(); c != 0 {
			errs = append(errs, fmt.Errorf("finalize at the end of the scenario: code %d: %s", c, w.b.LastError()))
		}
		w.inited = false
	}
	w.b.Teardown()
	errs = append(errs, w.closeOwner())
	for _, f := range w.pes {
		f.Finalize()
	}
	for _, m := range w.mems {
		errs = append(errs, m.Close())
	}
	errs = append(errs, w.stopMemProcs())
	if w.famd != nil {
		errs = append(errs, w.famd.Close())
	}
	for _, k := range env {
		os.Unsetenv(k)
	}
	errs = append(errs, os.RemoveAll(w.tmp), w.b.Violation())
	return errors.Join(errs...)
}

// outcome turns a call's code into the step's result: a plain step must
// succeed; a "try to" step records the code for a later Then.
func (w *world) outcome(try string, what string, code int) error {
	w.code = code
	if try == "" && code != 0 {
		return fmt.Errorf("%s failed with code %d: %s", what, code, w.b.LastError())
	}
	return nil
}

func (w *world) region(name string) (Handle, error) {
	if name == "NULL" {
		return w.b.Null(), nil
	}
	r, ok := w.regions[name]
	if !ok {
		return nil, fmt.Errorf("the scenario has no region %q", name)
	}
	return r, nil
}

func (w *world) item(name string) (Handle, error) {
	if name == "NULL" {
		return w.b.Null(), nil
	}
	d, ok := w.items[name]
	if !ok {
		return nil, fmt.Errorf("the scenario has no item %q", name)
	}
	return d, nil
}

func (w *world) ctx(name string) (Ctx, error) {
	if name == "" {
		return Ctx{}, nil
	}
	if name == "NULL" {
		return Ctx{H: w.b.Null(), On: true}, nil
	}
	c, ok := w.ctxs[name]
	if !ok {
		return Ctx{}, fmt.Errorf("the scenario has no context %q", name)
	}
	return Ctx{H: c, On: true}, nil
}

// ---- life cycle -------------------------------------------------------------

func (w *world) anInstance() error { return w.initialize("") }

func (w *world) initialize(try string) error {
	c := w.b.Initialize()
	if c == 0 {
		w.inited = true
	}
	return w.outcome(try, "fam_initialize", c)
}

func (w *world) finalize(try string) error {
	c := w.b.Finalize()
	if c == 0 {
		w.inited = false
	}
	return w.outcome(try, "fam_finalize", c)
}

// notInitialized gives the scenario a backend that was never initialized.
func (w *world) notInitialized() error {
	if w.inited {
		if err := w.finalize(""); err != nil {
			return err
		}
	}
	w.b.Teardown()
	if err := w.b.Violation(); err != nil {
		return err
	}
	w.b = w.newB()
	return nil
}

func (w *world) noFamd(timeout string) error {
	os.Setenv("OPENFAM_SERVER", "unix:"+filepath.Join(w.tmp, "nobody.sock"))
	os.Setenv("OPENFAM_TIMEOUT", timeout)
	return nil
}

func (w *world) reinitialize() error {
	if err := w.finalize(""); err != nil {
		return err
	}
	return w.initialize("")
}

// startFamd starts an in-process famd on the scenario's famd directory,
// keeping the options so that it can be restarted on the same data.
func (w *world) startFamd(network string) error {
	if w.famd == nil {
		w.famdOpts = embed.Options{DataDir: filepath.Join(w.tmp, "famd", "data"),
			ShmDir: filepath.Join(w.tmp, "famd", "shm"), BackupDir: filepath.Join(w.tmp, "famd", "backups"),
			Provider: famdProvider()}
		if network == "TCP" {
			tok := filepath.Join(w.tmp, "token")
			if err := os.WriteFile(tok, []byte("feature-token-1234567890\n"), 0o600); err != nil {
				return err
			}
			w.famdOpts.NoSocket, w.famdOpts.TCPAddr, w.famdOpts.Token = true, "127.0.0.1:0", "feature-token-1234567890"
			w.famdOpts.TCPIdentity = w.tcpIdentity
			os.Setenv("OPENFAM_TOKEN_FILE", tok)
		}
	}
	d, err := embed.Start(w.famdOpts)
	if err != nil {
		return err
	}
	w.famd = d
	if w.famdOpts.TCPAddr != "" {
		os.Setenv("OPENFAM_SERVER", d.Addr())
	} else {
		os.Setenv("OPENFAM_SERVER", "unix:"+d.SocketPath())
	}
	return nil
}

// tcpIdentityInstance serves the scenario over TCP from a famd that
// authenticates clients by cluster token only and gives every one of them
// the identity uid:gid.
func (w *world) tcpIdentityInstance(uid, gid string) error {
	if w.famd != nil {
		return errors.New("the scenario already runs a famd")
	}
	u, err1 := strconv.ParseUint(uid, 10, 32)
	g, err2 := strconv.ParseUint(gid, 10, 32)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("uid %q gid %q", uid, gid)
	}
	w.tcpIdentity = &rpc.Identity{UID: uint32(u), GID: uint32(g)}
	return w.servedInstance("TCP")
}

func (w *world) servedInstance(network string) error {
	if err := w.startFamd(network); err != nil {
		return err
	}
	return w.initialize("")
}

func (w *world) restartFamd() error {
	if w.famd == nil {
		return errors.New("no famd is running")
	}
	if err := w.famd.Close(); err != nil {
		return err
	}
	w.famd = nil
	return w.startFamd("")
}

// clusterToken is the cluster token of a multi-server famd; memory
// servers are reached over TCP, where clients must present it.
const clusterToken = "feature-cluster-token-0987654321"

// serverToken is what memory servers prove to join the metadata famd
// (over TCP they need it); clients never get it.
const serverToken = "feature-server-token-1357924680"

// startCluster starts an in-process metadata famd (role "metadata", so
// every region lives on memory servers) and k memory servers that join
// it, all on real sockets, and points OPENFAM_SERVER and
// OPENFAM_TOKEN_FILE at it. block is the interleave size.
func (w *world) startCluster(k int, block uint64) error {
	if w.famd != nil {
		return errors.New("the scenario already runs a famd")
	}
	dir := filepath.Join(w.tmp, "cluster")
	tok := filepath.Join(w.tmp, "cluster-token")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(tok, []byte(clusterToken+"\n"), 0o600); err != nil {
		return err
	}
	meta, err := embed.Start(embed.Options{DataDir: filepath.Join(dir, "meta"), ShmDir: filepath.Join(dir, "meta-shm"),
		BackupDir: filepath.Join(dir, "backups"), TCPAddr: "127.0.0.1:0", Token: clusterToken,
		Role: "metadata", InterleaveSize: block, ServerToken: serverToken, TCPIdentity: w.tcpIdentity, Provider: famdProvider()})
	if err != nil {
		return err
	}
	w.famd = meta
	for i := range k {
		mdir := filepath.Join(dir, fmt.Sprintf("mem%d", i))
		m, err := embed.StartMemory(embed.MemoryOptions{DataDir: mdir, ShmDir: mdir + "-shm",
			TCPAddr: "127.0.0.1:0", Join: meta.Addr(), Token: clusterToken, ServerToken: serverToken, Provider: famdProvider()})
		if err != nil {
			return fmt.Errorf("memory server %d: %v", i, err)
		}
		w.mems = append(w.mems, m)
		select {
		case <-m.Joined():
		case err := <-m.Failed():
			return fmt.Errorf("memory server %d failed before joining: %v", i, err)
		case <-time.After(60 * time.Second):
			return fmt.Errorf("memory server %d did not join within 60s", i)
		}
	}
	os.Setenv("OPENFAM_SERVER", "unix:"+meta.SocketPath())
	os.Setenv("OPENFAM_TOKEN_FILE", tok)
	return nil
}

// clusterInstance makes the scenario's instance a client of a metadata
// famd with k memory servers ("no" for none), replacing the instance a
// Background may have started. The interleave size defaults to 64 KiB.
func (w *world) clusterInstance(k, n, unit string) error {
	servers := 0
	if k != "no" {
		var err error
		if servers, err = strconv.Atoi(k); err != nil {
			return err
		}
	}
	block := uint64(64 << 10)
	if n != "" {
		var err error
		if block, err = parseSize(n, unit); err != nil {
			return err
		}
	}
	if w.inited {
		if err := w.finalize(""); err != nil {
			return err
		}
	}
	if err := w.startCluster(servers, block); err != nil {
		return err
	}
	return w.initialize("")
}

// ---- outcomes ---------------------------------------------------------------

func (w *world) itSucceeds() error {
	if w.code != 0 {
		return fmt.Errorf("the call failed with code %d: %s", w.code, w.b.LastError())
	}
	return nil
}

func (w *world) itFailsWith(name string) error {
	want, ok := famCodes[name]
	if !ok {
		return fmt.Errorf("unknown error name %s", name)
	}
	if w.code != want {
		return fmt.Errorf("got code %d (%s), want %s (%d)", w.code, w.b.LastError(), name, want)
	}
	return nil
}

func (w *world) messageMentions(s string) error {
	if !strings.Contains(w.b.LastError(), s) {
		return fmt.Errorf("error message %q does not mention %q", w.b.LastError(), s)
	}
	return nil
}

// ---- registration ---------------------------------------------------------------------

const (
	try   = `(?:I )?(try to |)`
	q     = `"([^"]*)"`
	num   = `(\d+)`
	size  = `(\d+) ?(bytes?|KiB|MiB)`
	mode  = `(0[0-7]+)`
	onCtx = `(?: on context "([^"]*)")?`
	nb    = `( non-blocking)?`
	typ   = `(int32|int64|uint32|uint64|float|double|int128)`
	val   = `(\S+)`
)

// register registers every step, area by area, always in the same order
// (the order in which godog tries them).
func (w *world) register(sc *godog.ScenarioContext) {
	w.registerLifecycle(sc)
	w.registerRegions(sc)
	w.registerItems(sc)
	w.registerGetPut(sc)
	w.registerGatherScatter(sc)
	w.registerAtomics(sc)
	w.registerContexts(sc)
	w.registerMapping(sc)
	w.registerBackup(sc)
	w.registerLauncher(sc)
	w.registerActAs(sc)
	w.registerIdentity(sc)
	w.registerOwner(sc)
	w.registerListing(sc)
	w.registerPersist(sc)
	w.registerRedundancy(sc)
}

// registerLifecycle registers the steps that start and stop OpenFAM and
// famd and those that check a step's outcome.
func (w *world) registerLifecycle(sc *godog.ScenarioContext) {
	sc.Step(`^an OpenFAM instance$`, w.anInstance)
	sc.Step(`^an OpenFAM instance served by famd over (unix|TCP)$`, w.servedInstance)
	sc.Step(`^an OpenFAM instance served by famd over TCP where every client acts as uid (\d+) gid (\d+)$`, w.tcpIdentityInstance)
	sc.Step(`^OpenFAM is not initialized$`, w.notInitialized)
	sc.Step(`^OPENFAM_SERVER names a socket where no famd listens, with a timeout of (\d+ms)$`, w.noFamd)
	sc.Step(`^`+try+`initialize OpenFAM$`, w.initialize)
	sc.Step(`^`+try+`finalize OpenFAM$`, w.finalize)
	sc.Step(`^I finalize and initialize OpenFAM again$`, w.reinitialize)
	sc.Step(`^famd is stopped and started again on the same data directory$`, w.restartFamd)
	sc.Step(`^(?:an OpenFAM instance served by )?a famd with (no|\d+) memory servers?(?: and an interleave size of `+size+`)?$`, w.clusterInstance)
	sc.Step(`^it succeeds$`, w.itSucceeds)
	sc.Step(`^it fails with (FAM_E[A-Z]+)$`, w.itFailsWith)
	sc.Step(`^the error message mentions `+q+`$`, w.messageMentions)
}

// scenarioInit returns godog's per-scenario initializer for a backend
// factory, counting finished scenarios by area tag into counts.
func scenarioInit(newBackend func() Backend, counts *areaCounts) func(*godog.ScenarioContext) {
	return func(sc *godog.ScenarioContext) {
		w := &world{b: newBackend(), newB: newBackend}
		sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
			if err := w.setup(); err != nil {
				return ctx, err
			}
			return providerBefore(ctx, s) // provider_test.go
		})
		sc.After(func(ctx context.Context, s *godog.Scenario, err error) (context.Context, error) {
			terr := w.teardown()
			if err == nil && terr == nil && countable(s) {
				counts.add(s.Tags)
			}
			return ctx, terr
		})
		w.register(sc)
	}
}
