package features

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

// Steps in which another user owns regions and items while the scenario's
// instance holds handles on them. The owner cannot share the embedded
// store with the instance under test (one process-wide instance holds it),
// so these scenarios run a famd that serves the instance under test on its
// Unix socket (as this process's uid) and the owner, a Go core client, over
// TCP, where famd gives every client one configured identity: user N of
// this process's group or of another. The instance under test is then
// bound by the owner's mode bits on both backends, items mapped on its host
// included, and sees the owner's permission changes while it holds handles.

// ownerState is the other user's client and the handles it named.
type ownerState struct {
	uid     uint32
	f       *core.Fam
	regions map[string]*core.Region
	items   map[string]*core.Item
}

// ownerIdentity parses "user N of (my|another) group" for a famd's TCP
// identity.
func ownerIdentity(uid, group string) (*rpc.Identity, error) {
	u, g, err := strangerIDs(uid, group)
	if err != nil {
		return nil, err
	}
	return &rpc.Identity{UID: u, GID: g}, nil
}

// openOwner connects the owner's Go client to famd's TCP listener.
func (w *world) openOwner(addr, tokenFile string) error {
	o := core.Options{Server: addr, TokenFile: tokenFile, UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 10 * time.Second}
	f, err := core.Initialize(o)
	if err != nil {
		return fmt.Errorf("the owner's client: %v", err)
	}
	if uid, _ := f.Identity(); uid != w.tcpIdentity.UID && uid != uint32(os.Getuid()) {
		f.Finalize()
		return fmt.Errorf("the owner's client acts as uid %d", uid)
	}
	w.owner = &ownerState{uid: w.tcpIdentity.UID, f: f, regions: map[string]*core.Region{}, items: map[string]*core.Item{}}
	return nil
}

// ownerInstance: famd serves the instance under test on its Unix socket
// and user uid, the owner, over TCP.
func (w *world) ownerInstance(uid, group string) error {
	if w.famd != nil {
		return errors.New("the scenario already runs a famd")
	}
	id, err := ownerIdentity(uid, group)
	if err != nil {
		return err
	}
	if w.inited {
		if err := w.finalize(""); err != nil {
			return err
		}
	}
	tok := filepath.Join(w.tmp, "owner-token")
	const token = "feature-owner-token-2468013579"
	if err := os.WriteFile(tok, []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	w.tcpIdentity = id
	w.famdOpts = embed.Options{DataDir: filepath.Join(w.tmp, "famd", "data"),
		ShmDir: filepath.Join(w.tmp, "famd", "shm"), BackupDir: filepath.Join(w.tmp, "famd", "backups"),
		TCPAddr: "127.0.0.1:0", Token: token, TCPIdentity: id, Provider: famdProvider()}
	d, err := embed.Start(w.famdOpts)
	if err != nil {
		return err
	}
	w.famd = d
	os.Setenv("OPENFAM_SERVER", "unix:"+d.SocketPath())
	if err := w.initialize(""); err != nil {
		return err
	}
	return w.openOwner(d.Addr(), tok)
}

// ownerClusterInstance is ownerInstance on a metadata famd with k memory
// servers, replacing the famd a Background may have started.
func (w *world) ownerClusterInstance(k, n, unit, uid, group string) error {
	id, err := ownerIdentity(uid, group)
	if err != nil {
		return err
	}
	servers, err := strconv.Atoi(k)
	if err != nil {
		return err
	}
	block, err := parseSize(n, unit)
	if err != nil {
		return err
	}
	if w.inited {
		if err := w.finalize(""); err != nil {
			return err
		}
	}
	var errs []error
	for _, m := range w.mems {
		errs = append(errs, m.Close())
	}
	if w.famd != nil {
		errs = append(errs, w.famd.Close())
	}
	w.mems, w.famd = nil, nil
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The replaced cluster's stores go: the new one starts empty.
	if err := os.RemoveAll(filepath.Join(w.tmp, "cluster")); err != nil {
		return err
	}
	w.tcpIdentity = id
	if err := w.startCluster(servers, block); err != nil {
		return err
	}
	if err := w.initialize(""); err != nil {
		return err
	}
	return w.openOwner(w.famd.Addr(), filepath.Join(w.tmp, "cluster-token"))
}

// theOwner checks that uid names the owner the scenario started.
func (w *world) theOwner(uid string) (*ownerState, error) {
	if w.owner == nil {
		return nil, errors.New("no other user owns anything here: start the instance \"beside user N ... over TCP\"")
	}
	if uid != strconv.FormatUint(uint64(w.owner.uid), 10) {
		return nil, fmt.Errorf("user %s is not the owner the scenario started (user %d)", uid, w.owner.uid)
	}
	return w.owner, nil
}

func (w *world) ownerCreatesRegion(uid, name, n, unit, mode, level string) error {
	o, err := w.theOwner(uid)
	if err != nil {
		return err
	}
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	attr := core.RegionAttr{}
	if level != "" {
		attr.PermLevel = core.PermDataItem
	}
	r, err := o.f.CreateRegion(name, size, m, attr)
	if err != nil {
		return err
	}
	o.regions[name] = r
	return nil
}

func (w *world) ownerAllocates(uid, name, n, unit, mode, region string) error {
	o, err := w.theOwner(uid)
	if err != nil {
		return err
	}
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	r, ok := o.regions[region]
	if !ok {
		return fmt.Errorf("user %s made no region %q", uid, region)
	}
	it, err := r.Allocate(name, size, m)
	if err != nil {
		return err
	}
	o.items[name] = it
	return nil
}

func (w *world) ownerChmod(uid, kind, name, mode string) error {
	o, err := w.theOwner(uid)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	if kind == "region" {
		r, ok := o.regions[name]
		if !ok {
			return fmt.Errorf("user %s made no region %q", uid, name)
		}
		return r.ChangePermissions(m)
	}
	it, ok := o.items[name]
	if !ok {
		return fmt.Errorf("user %s made no item %q", uid, name)
	}
	return it.ChangePermissions(m)
}

func (w *world) ownerPuts(uid, text, off, name string) error {
	o, err := w.theOwner(uid)
	if err != nil {
		return err
	}
	at, err := strconv.ParseUint(off, 10, 64)
	if err != nil {
		return err
	}
	it, ok := o.items[name]
	if !ok {
		return fmt.Errorf("user %s made no item %q", uid, name)
	}
	return o.f.Default().Put([]byte(text), it, at)
}

func (w *world) ownerReads(uid, text, off, name string) error {
	o, err := w.theOwner(uid)
	if err != nil {
		return err
	}
	at, err := strconv.ParseUint(off, 10, 64)
	if err != nil {
		return err
	}
	it, ok := o.items[name]
	if !ok {
		return fmt.Errorf("user %s made no item %q", uid, name)
	}
	buf := make([]byte, len(text))
	if err := o.f.Default().Get(buf, it, at); err != nil {
		return err
	}
	if !bytes.Equal(buf, []byte(text)) {
		return fmt.Errorf("user %s reads %q, want %q", uid, buf, text)
	}
	return nil
}

// Another user's permission change reaches this instance's open handles
// through famd's push to its session, after the owner's call returned: the
// steps below give it until a deadline, checking at short intervals.
const reachDeadline = 10 * time.Second

// eventually runs try until it returns nil or the deadline passes, and
// then returns its last error.
func eventually(try func() error) error {
	deadline := time.Now().Add(reachDeadline)
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *world) eventuallyPut(text, off, name string) error {
	return eventually(func() error { return w.put("", text, off, name, "", "") })
}

func (w *world) eventuallyReads(n, off, name, want string) error {
	return eventually(func() error { return w.readingGives(n, off, name, want) })
}

func (w *world) eventuallyGetFails(n, off, name, code string) error {
	return eventually(func() error {
		if err := w.get("try to ", n, off, name, "b", "", ""); err != nil {
			return err
		}
		return w.itFailsWith(code)
	})
}

func (w *world) eventuallyPutFails(text, off, name, code string) error {
	return eventually(func() error {
		if err := w.put("try to ", text, off, name, "", ""); err != nil {
			return err
		}
		return w.itFailsWith(code)
	})
}

// closeOwner finalizes the owner's client (teardown).
func (w *world) closeOwner() error {
	if w.owner == nil {
		return nil
	}
	err := w.owner.f.Finalize()
	w.owner = nil
	return err
}

func (w *world) registerOwner(sc *godog.ScenarioContext) {
	beside := `, beside user ` + num + ` of (my|another) group over TCP$`
	sc.Step(`^an OpenFAM instance served by famd over unix`+beside, w.ownerInstance)
	sc.Step(`^an OpenFAM instance served by a famd with (\d+) memory servers and an interleave size of `+size+beside, w.ownerClusterInstance)
	sc.Step(`^user `+num+` creates region `+q+` of `+size+` with mode `+mode+`( and data item-level permissions)?$`, w.ownerCreatesRegion)
	sc.Step(`^user `+num+` allocates item `+q+` of `+size+` with mode `+mode+` in region `+q+`$`, w.ownerAllocates)
	sc.Step(`^user `+num+` changes the permissions of (item|region) `+q+` to `+mode+`$`, w.ownerChmod)
	sc.Step(`^user `+num+` puts `+q+` at offset `+num+` of item `+q+`$`, w.ownerPuts)
	sc.Step(`^user `+num+` reads `+q+` at offset `+num+` of item `+q+`$`, w.ownerReads)
	sc.Step(`^within 10 seconds I can put `+q+` at offset `+num+` of item `+q+`$`, w.eventuallyPut)
	sc.Step(`^within 10 seconds reading `+num+` bytes at offset `+num+` of item `+q+` gives `+q+`$`, w.eventuallyReads)
	sc.Step(`^within 10 seconds putting `+q+` at offset `+num+` of item `+q+` fails with (FAM_E[A-Z]+)$`, w.eventuallyPutFails)
	sc.Step(`^within 10 seconds getting `+num+` bytes at offset `+num+` of item `+q+` fails with (FAM_E[A-Z]+)$`, w.eventuallyGetFails)
}
