package features

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

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
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OPENFAM_PE_CONFIG"}

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
			ShmDir: filepath.Join(w.tmp, "famd", "shm"), BackupDir: filepath.Join(w.tmp, "famd", "backups")}
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
		Role: "metadata", InterleaveSize: block, ServerToken: serverToken, TCPIdentity: w.tcpIdentity})
	if err != nil {
		return err
	}
	w.famd = meta
	for i := range k {
		mdir := filepath.Join(dir, fmt.Sprintf("mem%d", i))
		m, err := embed.StartMemory(embed.MemoryOptions{DataDir: mdir, ShmDir: mdir + "-shm",
			TCPAddr: "127.0.0.1:0", Join: meta.Addr(), Token: clusterToken, ServerToken: serverToken})
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

// ---- regions ----------------------------------------------------------------

func (w *world) createRegion(try, name, n, unit, mode, mem, level, inter string) error {
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	var attr *core.RegionAttr
	if mem != "" || level != "" || inter != "" {
		attr = &core.RegionAttr{}
		switch mem {
		case "volatile":
			attr.Memory = core.Volatile
		case "persistent":
			attr.Memory = core.Persistent
		}
		switch level {
		case "region":
			attr.PermLevel = core.PermRegion
		case "data item":
			attr.PermLevel = core.PermDataItem
		}
		switch inter {
		case "enabled":
			attr.Interleave = core.InterleaveEnable
		case "disabled":
			attr.Interleave = core.InterleaveDisable
		}
	}
	r, c := w.b.CreateRegion(name, size, m, attr)
	if c == 0 {
		w.regions[name] = r
	}
	return w.outcome(try, "fam_create_region", c)
}

func (w *world) lookupRegion(try, name, as string) error {
	r, c := w.b.LookupRegion(name)
	if as == "" {
		as = name
	}
	if c == 0 {
		w.regions[as] = r
	}
	return w.outcome(try, "fam_lookup_region", c)
}

func (w *world) regionOp(try, verb, name string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	if verb == "destroy" {
		return w.outcome(try, "fam_destroy_region", w.b.DestroyRegion(r))
	}
	return w.outcome(try, "fam_close_region", w.b.CloseRegion(r))
}

func (w *world) resizeRegion(try, name, n, unit string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	size, err := parseSize(n, unit)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_resize_region", w.b.ResizeRegion(r, size))
}

func (w *world) chmodRegion(try, name, mode string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_change_region_permissions", w.b.ChangeRegionPermissions(r, m))
}

// checkStat compares a stat with a two-column table of field and value.
func checkStat(s Stat, t *godog.Table) error {
	for i, row := range t.Rows {
		field, want := row.Cells[0].Value, row.Cells[1].Value
		if i == 0 && field == "field" {
			continue // the header row
		}
		var got string
		switch field {
		case "size":
			got = strconv.FormatUint(s.Size, 10)
		case "mode":
			got = fmt.Sprintf("%04o", s.Mode)
		case "name":
			got = s.Name
		case "uid":
			got = strconv.FormatUint(uint64(s.UID), 10)
		case "gid":
			got = strconv.FormatUint(uint64(s.GID), 10)
		case "owner":
			got = "someone else"
			if s.UID == uint32(os.Getuid()) && s.GID == uint32(os.Getgid()) {
				got = "me"
			}
		case "memory":
			got = map[core.MemoryType]string{core.Volatile: "volatile", core.Persistent: "persistent"}[s.Attr.Memory]
		case "permission level":
			got = map[core.PermLevel]string{core.PermRegion: "region", core.PermDataItem: "data item"}[s.Attr.PermLevel]
		case "interleave":
			got = map[core.Interleave]string{core.InterleaveEnable: "enabled", core.InterleaveDisable: "disabled"}[s.Attr.Interleave]
		case "memory servers":
			got = strconv.FormatUint(s.NumServers, 10)
		case "interleave size":
			got = strconv.FormatUint(s.InterleaveSize, 10)
		default:
			return fmt.Errorf("unknown stat field %q", field)
		}
		if got != want {
			return fmt.Errorf("stat %s is %q, want %q (stat %+v)", field, got, want, s)
		}
	}
	return nil
}

func (w *world) regionHas(name string, t *godog.Table) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	s, c := w.b.StatRegion(r)
	if c != 0 {
		return fmt.Errorf("fam_stat_region: code %d: %s", c, w.b.LastError())
	}
	return checkStat(s, t)
}

func (w *world) statRegion(try, name string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	_, c := w.b.StatRegion(r)
	return w.outcome(try, "fam_stat_region", c)
}

func (w *world) noteRegionGlobal(name string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	g, c := w.b.RegionGlobal(r)
	if c != 0 {
		return fmt.Errorf("fam_region_global: code %d: %s", c, w.b.LastError())
	}
	if g.Offset != core.RegionOffset {
		return fmt.Errorf("region %q's global descriptor has offset %d, want UINT64_MAX", name, g.Offset)
	}
	w.globals["region "+name] = g
	return nil
}

func (w *world) regionFromGlobal(try, as, name string) error {
	g, ok := w.globals["region "+name]
	if !ok {
		return fmt.Errorf("no global descriptor noted for region %q", name)
	}
	r, c := w.b.RegionFromGlobal(g)
	if c == 0 {
		w.regions[as] = r
	}
	return w.outcome(try, "fam_region_from_global", c)
}

// ---- items ------------------------------------------------------------------

func (w *world) allocate(try, unnamed, name, n, unit, mode, rname string) error {
	r, err := w.region(rname)
	if err != nil {
		return err
	}
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	d, c := w.b.Allocate(r, name, unnamed != "", size, m)
	if c == 0 {
		w.items[name] = d
	}
	return w.outcome(try, "fam_allocate", c)
}

func (w *world) lookup(try, name, region, as string) error {
	d, c := w.b.Lookup(name, region)
	if as == "" {
		as = name
	}
	if c == 0 {
		w.items[as] = d
	}
	return w.outcome(try, "fam_lookup", c)
}

func (w *world) itemOp(try, verb, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	if verb == "deallocate" {
		return w.outcome(try, "fam_deallocate", w.b.Deallocate(d))
	}
	return w.outcome(try, "fam_close", w.b.Close(d))
}

func (w *world) chmodItem(try, name, mode string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_change_permissions", w.b.ChangePermissions(d, m))
}

func (w *world) itemHas(name string, t *godog.Table) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	s, c := w.b.Stat(d)
	if c != 0 {
		return fmt.Errorf("fam_stat: code %d: %s", c, w.b.LastError())
	}
	return checkStat(s, t)
}

func (w *world) statItem(try, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	_, c := w.b.Stat(d)
	return w.outcome(try, "fam_stat", c)
}

func (w *world) noteItemGlobal(name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	g, c := w.b.DescGlobal(d)
	if c != 0 {
		return fmt.Errorf("fam_desc_global: code %d: %s", c, w.b.LastError())
	}
	w.globals["item "+name] = g
	return nil
}

func (w *world) itemFromGlobal(try, as, name string) error {
	g, ok := w.globals["item "+name]
	if !ok {
		return fmt.Errorf("no global descriptor noted for item %q", name)
	}
	d, c := w.b.DescFromGlobal(g)
	if c == 0 {
		w.items[as] = d
	}
	return w.outcome(try, "fam_desc_from_global", c)
}

func (w *world) itemFromLiteralGlobal(try, as, rid, off string) error {
	r, err1 := strconv.ParseUint(rid, 10, 64)
	o, err2 := strconv.ParseUint(off, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	d, c := w.b.DescFromGlobal(core.GlobalDesc{RegionID: r, Offset: o})
	if c == 0 {
		w.items[as] = d
	}
	return w.outcome(try, "fam_desc_from_global", c)
}

func (w *world) sameGlobal(a, b string) error {
	ga, oka := w.globals["item "+a]
	gb, okb := w.globals["item "+b]
	if !oka || !okb {
		return errors.New("both global descriptors must be noted first")
	}
	if ga != gb {
		return fmt.Errorf("global descriptors differ: %+v and %+v", ga, gb)
	}
	return nil
}

// ---- get and put -------------------------------------------------------------

func xfer(write bool, nb string) Xfer {
	switch {
	case write && nb != "":
		return PutNB
	case write:
		return Put
	case nb != "":
		return GetNB
	}
	return Get
}

func parseU64(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

// put writes text at off; the local buffer lives until teardown, as a
// non-blocking put needs.
func (w *world) put(try, text, off, name, nb, ctx string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(len(text)))
	copy(buf, text)
	return w.outcome(try, "put", w.b.RW(c, xfer(true, nb), buf, uint64(len(text)), d, o))
}

func (w *world) fill(try, n, ch, off, name, nb, ctx string) error {
	cnt, err := parseU64(n)
	if err != nil {
		return err
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(cnt)
	copy(buf, bytes.Repeat([]byte(ch), int(cnt)))
	return w.outcome(try, "put", w.b.RW(c, xfer(true, nb), buf, cnt, d, o))
}

func (w *world) get(try, n, off, name, bufName, nb, ctx string) error {
	cnt, err := parseU64(n)
	if err != nil {
		return err
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(cnt)
	w.bufs[bufName] = buf
	return w.outcome(try, "get", w.b.RW(c, xfer(false, nb), buf, cnt, d, o))
}

func (w *world) nullBuffer(dir, n, off, name string) error {
	cnt, err := parseU64(n)
	if err != nil {
		return err
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	return w.outcome("try", dir, w.b.RW(Ctx{}, xfer(dir == "put", ""), nil, cnt, d, o))
}

func (w *world) reading(n, off, name string) ([]byte, error) {
	cnt, err := parseU64(n)
	if err != nil {
		return nil, err
	}
	d, err := w.item(name)
	if err != nil {
		return nil, err
	}
	o, err := parseU64(off)
	if err != nil {
		return nil, err
	}
	buf := w.b.Buffer(cnt)
	if c := w.b.RW(Ctx{}, Get, buf, cnt, d, o); c != 0 {
		return nil, fmt.Errorf("fam_get_blocking: code %d: %s", c, w.b.LastError())
	}
	return append([]byte(nil), buf...), nil
}

func (w *world) readingGives(n, off, name, want string) error {
	got, err := w.reading(n, off, name)
	if err != nil {
		return err
	}
	if string(got) != want {
		return fmt.Errorf("read %q, want %q", got, want)
	}
	return nil
}

// readingGivesRun checks bytes read against a run of cnt copies of ch ("0"
// meaning zero bytes).
func (w *world) readingGivesRun(n, off, name, cnt, ch string) error {
	got, err := w.reading(n, off, name)
	if err != nil {
		return err
	}
	return checkRun(got, cnt, ch)
}

func checkRun(got []byte, cnt, ch string) error {
	k, err := strconv.Atoi(cnt)
	if err != nil {
		return err
	}
	want := bytes.Repeat([]byte(ch), k)
	if ch == "zero" {
		want = make([]byte, k)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("read %d bytes %q..., want %d bytes of %s", len(got), got[:min(len(got), 16)], k, ch)
	}
	return nil
}

func (w *world) bufferHolds(name, want string) error {
	b, ok := w.bufs[name]
	if !ok {
		return fmt.Errorf("no buffer %q", name)
	}
	if string(b) != want {
		return fmt.Errorf("buffer %q holds %q, want %q", name, b, want)
	}
	return nil
}

func (w *world) bufferHoldsRun(name, cnt, ch string) error {
	b, ok := w.bufs[name]
	if !ok {
		return fmt.Errorf("no buffer %q", name)
	}
	return checkRun(b, cnt, ch)
}

// ---- gather and scatter ----------------------------------------------------------

func (w *world) gsArgs(name, ctx string) (Handle, Ctx, error) {
	d, err := w.item(name)
	if err != nil {
		return nil, Ctx{}, err
	}
	c, err := w.ctx(ctx)
	return d, c, err
}

func (w *world) gatherStrided(try, n, es, name, first, stride, bufName, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	v, err := parseList(strings.Join([]string{n, es, first, stride}, ","))
	if err != nil {
		return err
	}
	buf := w.b.Buffer(max(v[0]*v[1], 1))
	w.bufs[bufName] = buf
	return w.outcome(try, "gather", w.b.Strided(c, xfer(false, nb), buf, d, v[0], v[2], v[3], v[1]))
}

func (w *world) scatterStrided(try, text, n, es, name, first, stride, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	v, err := parseList(strings.Join([]string{n, es, first, stride}, ","))
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(max(len(text), 1)))
	copy(buf, text)
	return w.outcome(try, "scatter", w.b.Strided(c, xfer(true, nb), buf, d, v[0], v[2], v[3], v[1]))
}

func (w *world) gatherIndexed(try, list, es, name, bufName, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	idx, err := parseList(list)
	if err != nil {
		return err
	}
	e, err := parseU64(es)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(len(idx)) * e)
	w.bufs[bufName] = buf
	return w.outcome(try, "gather", w.b.Indexed(c, xfer(false, nb), buf, d, idx, e))
}

func (w *world) scatterIndexed(try, text, list, es, name, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	idx, err := parseList(list)
	if err != nil {
		return err
	}
	e, err := parseU64(es)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(len(text)))
	copy(buf, text)
	return w.outcome(try, "scatter", w.b.Indexed(c, xfer(true, nb), buf, d, idx, e))
}

// ---- atomics ----------------------------------------------------------------------

func (w *world) holds(name, typ, val, off string) error {
	k, ok := kinds[typ]
	if !ok {
		return fmt.Errorf("unknown type %q", typ)
	}
	v, err := parseValue(k, val)
	if err != nil {
		return err
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	b := w.b.Buffer(k.Size())
	copy(b, encode(k, v))
	if c := w.b.RW(Ctx{}, Put, b, k.Size(), d, o); c != 0 {
		return fmt.Errorf("fam_put_blocking: code %d: %s", c, w.b.LastError())
	}
	return nil
}

// valueIs reads the word with a plain get, not an atomic, so that a broken
// atomic cannot vouch for itself.
func (w *world) valueIs(typ, off, name, want string) error {
	k, ok := kinds[typ]
	if !ok {
		return fmt.Errorf("unknown type %q", typ)
	}
	got, err := w.reading(strconv.FormatUint(k.Size(), 10), off, name)
	if err != nil {
		return err
	}
	wantC, err := canonical(k, want)
	if err != nil {
		return err
	}
	if g := formatValue(k, decode(k, got)); g != wantC {
		return fmt.Errorf("the %s at offset %s is %s, want %s", typ, off, g, wantC)
	}
	return nil
}

func (w *world) atomic(try, opName, typ, off, name, val, ctx string) error {
	o, ok := atomicOps[opName]
	if !ok {
		return fmt.Errorf("unknown atomic %q", opName)
	}
	return w.doAtomic(try, o.op, o.fetch, typ, off, name, val, "", ctx)
}

func (w *world) fetch(try, typ, off, name, ctx string) error {
	return w.doAtomic(try, amo.Fetch, true, typ, off, name, "0", "", ctx)
}

func (w *world) compareSwap(try, typ, off, name, expected, desired, ctx string) error {
	return w.doAtomic(try, amo.CompareSwap, true, typ, off, name, desired, expected, ctx)
}

func (w *world) doAtomic(try string, op amo.Op, fetch bool, typ, off, name, val, cmpVal, ctx string) error {
	k, ok := kinds[typ]
	if !ok {
		return fmt.Errorf("unknown type %q", typ)
	}
	v, err := parseValue(k, val)
	if err != nil {
		return err
	}
	var cmp amo.Value
	if cmpVal != "" {
		if cmp, err = parseValue(k, cmpVal); err != nil {
			return err
		}
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := strconv.ParseUint(off, 10, 64)
	if err != nil {
		return err
	}
	old, code := w.b.Atomic(c, d, o, k, op, fetch, v, cmp)
	w.returned, w.retKind = old, k
	return w.outcome(try, "atomic", code)
}

func (w *world) returnedIs(want string) error {
	wantC, err := canonical(w.retKind, want)
	if err != nil {
		return err
	}
	if g := formatValue(w.retKind, w.returned); g != wantC {
		return fmt.Errorf("the atomic returned %s, want %s", g, wantC)
	}
	return nil
}

// ---- contexts, ordering, copies -------------------------------------------------

func (w *world) openContext(name string) error {
	c, code := w.b.ContextOpen()
	if code == 0 {
		w.ctxs[name] = c
	}
	return w.outcome("", "fam_context_open", code)
}

func (w *world) closeContext(try, name string) error {
	c, err := w.ctx(name)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_context_close", w.b.ContextClose(c.H))
}

func (w *world) quiet(try, ctx string) error {
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_quiet", w.b.Quiet(c))
}

func (w *world) fence(try, ctx string) error {
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_fence", w.b.Fence(c))
}

func (w *world) progressIs(ctx, n string) error {
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	want, err := parseU64(n)
	if err != nil {
		return err
	}
	if got := w.b.Progress(c); got != want {
		return fmt.Errorf("%d operations in progress, want %d", got, want)
	}
	return nil
}

func (w *world) copyItem(try, n, unit, soff, src, doff, dst, ctx string) error {
	cnt, err := parseSize(n, unit)
	if err != nil {
		return err
	}
	s, err := w.item(src)
	if err != nil {
		return err
	}
	d, err := w.item(dst)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	so, err1 := parseU64(soff)
	do, err2 := parseU64(doff)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	wt, code := w.b.Copy(c, s, so, d, do, cnt)
	if code == 0 {
		w.wait = wt
	}
	return w.outcome(try, "fam_copy", code)
}

func (w *world) waitFor(try, what string) error {
	if w.wait == nil {
		return errors.New("nothing to wait for")
	}
	wt := w.wait
	w.wait = nil
	return w.outcome(try, "fam_"+what+"_wait", w.b.Wait(what, wt))
}

// ---- mapping ------------------------------------------------------------------------

func (w *world) mapItem(try, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	s, c := w.b.Stat(d)
	if c != 0 {
		return w.outcome(try, "fam_stat", c)
	}
	m, c := w.b.Map(d, s.Size)
	if c == 0 {
		w.maps[name] = m
	}
	return w.outcome(try, "fam_map", c)
}

func (w *world) writeMapping(text, off, name string) error {
	m, ok := w.maps[name]
	if !ok {
		return fmt.Errorf("item %q is not mapped", name)
	}
	o, err := strconv.Atoi(off)
	if err != nil {
		return err
	}
	copy(m[o:], text)
	return nil
}

func (w *world) mappingReads(name, off, want string) error {
	m, ok := w.maps[name]
	if !ok {
		return fmt.Errorf("item %q is not mapped", name)
	}
	o, err := strconv.Atoi(off)
	if err != nil {
		return err
	}
	if got := string(m[o : o+len(want)]); got != want {
		return fmt.Errorf("mapping reads %q, want %q", got, want)
	}
	return nil
}

// mappingPages reports whether the whole pages the mapping of item name
// lies in contain text: a mapping exposes every byte of its pages, not
// only the item's.
func (w *world) mappingPages(name, not, text string) error {
	m, ok := w.maps[name]
	if !ok {
		return fmt.Errorf("item %q is not mapped", name)
	}
	const page = 4096
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	lo := base &^ (page - 1)
	hi := (base + uintptr(len(m)) + page - 1) &^ (page - 1)
	pages := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(m)), -int(base-lo))), hi-lo)
	if has := bytes.Contains(pages, []byte(text)); has != (not == "") {
		return fmt.Errorf("the pages mapped for item %q contain %q: %v", name, text, has)
	}
	return nil
}

// longName is a name of n bytes of ch, for the name-length steps.
func (w *world) longName(n, ch string) (string, error) {
	k, err := strconv.Atoi(n)
	if err != nil {
		return "", err
	}
	return strings.Repeat(ch, k), nil
}

func (w *world) createLongRegion(try, n, ch string) error {
	name, err := w.longName(n, ch)
	if err != nil {
		return err
	}
	if try == "" {
		w.lastLong = name
	}
	return w.createRegion(try, name, "64", "KiB", "0600", "", "", "")
}

func (w *world) allocateLong(try, n, ch string) error {
	name, err := w.longName(n, ch)
	if err != nil {
		return err
	}
	return w.allocate(try, "", name, "64", "bytes", "0600", w.lastLong)
}

func (w *world) lookUpLong(n, ch string) error {
	name, err := w.longName(n, ch)
	if err != nil {
		return err
	}
	return w.lookup("", name, w.lastLong, "")
}

func (w *world) unmap(try, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	m := w.maps[name]
	delete(w.maps, name)
	return w.outcome(try, "fam_unmap", w.b.Unmap(m, d))
}

// ---- backup and restore ---------------------------------------------------------------

// waited runs a call returning a wait handle and then its wait: the step's
// code is the first failure of the two.
func (w *world) waited(try, what string, wt Handle, code int) error {
	if code == 0 {
		code = w.b.Wait(what, wt)
	}
	return w.outcome(try, "fam_"+what, code)
}

func (w *world) backup(try, name, bk string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	wt, c := w.b.Backup(d, bk)
	return w.waited(try, "backup", wt, c)
}

func (w *world) restore(try, bk, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	wt, c := w.b.Restore(bk, d)
	return w.waited(try, "restore", wt, c)
}

func (w *world) restoreNew(try, bk, name, mode, rname string) error {
	r, err := w.region(rname)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	wt, d, c := w.b.RestoreRegion(bk, r, name, m)
	if err := w.waited(try, "restore", wt, c); err != nil || w.code != 0 {
		return err
	}
	w.items[name] = d
	return nil
}

func (w *world) deleteBackup(try, bk string) error {
	wt, c := w.b.DeleteBackup(bk)
	return w.waited(try, "delete", wt, c)
}

func (w *world) listingCount(prefix, n string) error {
	s, c := w.b.ListBackup(prefix)
	if c != 0 {
		return fmt.Errorf("fam_list_backup: code %d: %s", c, w.b.LastError())
	}
	got := 0
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			got++
		}
	}
	if strconv.Itoa(got) != n {
		return fmt.Errorf("listing %q shows %d backups, want %s:\n%s", prefix, got, n, s)
	}
	return nil
}

func (w *world) listingLine(prefix, bk, size, mode string) error {
	s, c := w.b.ListBackup(prefix)
	if c != 0 {
		return fmt.Errorf("fam_list_backup: code %d: %s", c, w.b.LastError())
	}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && f[0] == bk {
			m, err := strconv.ParseUint(f[2], 0, 32)
			if err != nil {
				return fmt.Errorf("bad mode in %q", l)
			}
			want, _ := parseMode(mode)
			if f[1] != size || uint32(m) != want || f[3] != strconv.Itoa(os.Getuid()) {
				return fmt.Errorf("line %q: want size %s, mode %s, uid %d", l, size, mode, os.Getuid())
			}
			if _, err := time.Parse(time.RFC3339, f[5]); err != nil {
				return fmt.Errorf("line %q: bad time: %v", l, err)
			}
			return nil
		}
	}
	return fmt.Errorf("no line for backup %q in:\n%s", bk, s)
}

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

// ---- identities (Go backend only) -----------------------------------------------------

func (w *world) actAs(uid, group string) error {
	gb, ok := w.b.(*goBackend)
	if !ok {
		return errors.New("acting as another user needs the Go backend (tag the scenario @go-only)")
	}
	u, err := strconv.ParseUint(uid, 10, 32)
	if err != nil {
		return err
	}
	g := uint32(os.Getgid())
	if group == "another" {
		g++
	}
	gb.actAs(&[2]uint32{uint32(u), g})
	return nil
}

func (w *world) actAsMyself() error {
	gb, ok := w.b.(*goBackend)
	if !ok {
		return errors.New("acting as another user needs the Go backend (tag the scenario @go-only)")
	}
	gb.actAs(nil)
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

func (w *world) register(sc *godog.ScenarioContext) {
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

	sc.Step(`^`+try+`create region `+q+` of `+size+` with mode `+mode+`(?: and (volatile|persistent) memory)?(?: and (region|data item)-level permissions)?(?: and interleaving (enabled|disabled))?$`, w.createRegion)
	sc.Step(`^`+try+`look up region `+q+`(?: as `+q+`)?$`, w.lookupRegion)
	sc.Step(`^`+try+`(destroy|close) region `+q+`$`, w.regionOp)
	sc.Step(`^`+try+`resize region `+q+` to `+size+`$`, w.resizeRegion)
	sc.Step(`^`+try+`change the permissions of region `+q+` to `+mode+`$`, w.chmodRegion)
	sc.Step(`^region `+q+` has$`, w.regionHas)
	sc.Step(`^`+try+`stat region `+q+`$`, w.statRegion)
	sc.Step(`^I note the global descriptor of region `+q+`$`, w.noteRegionGlobal)
	sc.Step(`^`+try+`open region `+q+` from the global descriptor of region `+q+`$`, w.regionFromGlobal)

	sc.Step(`^`+try+`allocate (?:an )?(unnamed )?item `+q+` of `+size+` with mode `+mode+` in region `+q+`$`, w.allocate)
	sc.Step(`^`+try+`look up item `+q+` in region `+q+`(?: as `+q+`)?$`, w.lookup)
	sc.Step(`^`+try+`(deallocate|close) item `+q+`$`, w.itemOp)
	sc.Step(`^`+try+`change the permissions of item `+q+` to `+mode+`$`, w.chmodItem)
	sc.Step(`^item `+q+` has$`, w.itemHas)
	sc.Step(`^`+try+`stat item `+q+`$`, w.statItem)
	sc.Step(`^I note the global descriptor of item `+q+`$`, w.noteItemGlobal)
	sc.Step(`^`+try+`open item `+q+` from the global descriptor of item `+q+`$`, w.itemFromGlobal)
	sc.Step(`^`+try+`open item `+q+` from the global descriptor \{`+num+`, `+num+`\}$`, w.itemFromLiteralGlobal)
	sc.Step(`^items `+q+` and `+q+` have the same global descriptor$`, w.sameGlobal)

	sc.Step(`^`+try+`put `+q+` at offset `+num+` of item `+q+nb+onCtx+`$`, w.put)
	sc.Step(`^`+try+`put `+num+` bytes of `+q+` at offset `+num+` of item `+q+nb+onCtx+`$`, w.fill)
	sc.Step(`^`+try+`get `+num+` bytes at offset `+num+` of item `+q+` into buffer `+q+nb+onCtx+`$`, w.get)
	sc.Step(`^I try to (get|put) `+num+` bytes at offset `+num+` of item `+q+` with a NULL buffer$`, w.nullBuffer)
	sc.Step(`^reading `+num+` bytes at offset `+num+` of item `+q+` gives `+q+`$`, w.readingGives)
	sc.Step(`^reading `+num+` bytes at offset `+num+` of item `+q+` gives `+num+` (?:bytes of "(.)"|(zero) bytes)$`,
		func(n, off, name, cnt, ch, zero string) error { return w.readingGivesRun(n, off, name, cnt, ch+zero) })
	sc.Step(`^buffer `+q+` holds `+q+`$`, w.bufferHolds)
	sc.Step(`^buffer `+q+` holds `+num+` (?:bytes of "(.)"|(zero) bytes)$`,
		func(name, cnt, ch, zero string) error { return w.bufferHoldsRun(name, cnt, ch+zero) })

	sc.Step(`^`+try+`gather `+num+` elements of `+num+` bytes? from item `+q+` starting at element `+num+` with stride `+num+` into buffer `+q+nb+onCtx+`$`, w.gatherStrided)
	sc.Step(`^`+try+`scatter `+q+` as `+num+` elements of `+num+` bytes? into item `+q+` starting at element `+num+` with stride `+num+nb+onCtx+`$`, w.scatterStrided)
	sc.Step(`^`+try+`gather elements? ([\d, ]+) of `+num+` bytes? from item `+q+` into buffer `+q+nb+onCtx+`$`, w.gatherIndexed)
	sc.Step(`^`+try+`scatter `+q+` to elements? ([\d, ]+) of `+num+` bytes? of item `+q+nb+onCtx+`$`, w.scatterIndexed)

	sc.Step(`^item `+q+` holds the `+typ+` `+val+` at offset `+num+`$`, w.holds)
	sc.Step(`^the `+typ+` at offset `+num+` of item `+q+` is `+val+`$`, w.valueIs)
	sc.Step(`^`+try+`apply (\w+) to the `+typ+` at offset `+num+` of item `+q+` with `+val+onCtx+`$`, w.atomic)
	sc.Step(`^`+try+`fetch the `+typ+` at offset `+num+` of item `+q+onCtx+`$`, w.fetch)
	sc.Step(`^`+try+`compare and swap the `+typ+` at offset `+num+` of item `+q+` expecting `+val+` with `+val+onCtx+`$`, w.compareSwap)
	sc.Step(`^the atomic returned `+val+`$`, w.returnedIs)

	sc.Step(`^I open context `+q+`$`, w.openContext)
	sc.Step(`^`+try+`close context `+q+`$`, w.closeContext)
	sc.Step(`^`+try+`quiet(?: context `+q+`)?$`, w.quiet)
	sc.Step(`^`+try+`fence(?: context `+q+`)?$`, w.fence)
	sc.Step(`^the operations in progress(?: on context `+q+`)? number `+num+`$`, w.progressIs)
	sc.Step(`^`+try+`copy `+size+` from offset `+num+` of item `+q+` to offset `+num+` of item `+q+onCtx+`$`, w.copyItem)
	sc.Step(`^`+try+`wait for the (copy)$`, w.waitFor)

	sc.Step(`^`+try+`map item `+q+`$`, w.mapItem)
	sc.Step(`^I write `+q+` at offset `+num+` through the mapping of item `+q+`$`, w.writeMapping)
	sc.Step(`^the mapping of item `+q+` reads at offset `+num+` `+q+`$`, w.mappingReads)
	sc.Step(`^`+try+`unmap item `+q+`$`, w.unmap)
	sc.Step(`^`+try+`create a region whose name is `+num+` bytes of `+q+`$`, w.createLongRegion)
	sc.Step(`^`+try+`allocate an item whose name is `+num+` bytes of `+q+` in that region$`, w.allocateLong)
	sc.Step(`^the item whose name is `+num+` bytes of `+q+` can be looked up in that region$`, w.lookUpLong)
	sc.Step(`^the pages of the mapping of item `+q+` (do not )?contain `+q+`$`, w.mappingPages)

	sc.Step(`^`+try+`back up item `+q+` as `+q+`$`, w.backup)
	sc.Step(`^`+try+`restore backup `+q+` into item `+q+`$`, w.restore)
	sc.Step(`^`+try+`restore backup `+q+` as a new item `+q+` with mode `+mode+` in region `+q+`$`, w.restoreNew)
	sc.Step(`^`+try+`delete backup `+q+`$`, w.deleteBackup)
	sc.Step(`^listing the backups starting with `+q+` shows `+num+` backups?$`, w.listingCount)
	sc.Step(`^the backup listing for `+q+` has a line for `+q+` of `+num+` bytes with mode `+mode+`$`, w.listingLine)

	sc.Step(`^a famd running job `+q+` of `+num+` PEs, where this instance is PE 0$`, w.aJob)
	sc.Step(`^a famd with `+num+` memory servers running job `+q+` of `+num+` PEs, where this instance is PE 0$`, w.aStripedJob)
	sc.Step(`^PE_ID is `+num+` and PE_COUNT is `+num+`$`, w.peIs)
	sc.Step(`^`+try+`call fam_barrier_all$`, w.barrier)
	sc.Step(`^every PE writes its rank plus 100 into item `+q+` of region `+q+`, calls fam_barrier_all and then reads every rank$`, w.ranksThenBarrier)
	sc.Step(`^an OpenFAM instance without famd in a job of `+num+` PEs$`, w.embeddedJob)

	sc.Step(`^I act as user `+num+` of (my|another) group$`, w.actAs)
	sc.Step(`^I act as myself again$`, w.actAsMyself)
	w.registerIdentity(sc)
	w.registerOwner(sc)
	w.registerListing(sc)
}

// scenarioInit returns godog's per-scenario initializer for a backend
// factory, counting finished scenarios by area tag into counts.
func scenarioInit(newBackend func() Backend, counts *areaCounts) func(*godog.ScenarioContext) {
	return func(sc *godog.ScenarioContext) {
		w := &world{b: newBackend(), newB: newBackend}
		sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
			return ctx, w.setup()
		})
		sc.After(func(ctx context.Context, s *godog.Scenario, err error) (context.Context, error) {
			terr := w.teardown()
			if err == nil && terr == nil {
				counts.add(s.Tags)
			}
			return ctx, terr
		})
		w.register(sc)
	}
}
