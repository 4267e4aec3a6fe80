package core_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

// The core's API is served to a program two ways: by the embedded store
// (the program opens the data directory itself) and by a famd (the program
// is a client over a Unix socket or TCP). The shared suite (core_test.go)
// is written once, against a testEnv, and forEachMode runs every test on
// every mode, so that a difference between the modes shows up as a failing
// subtest (TestX/embedded passes, TestX/famd fails) rather than as a test
// nobody wrote for the second mode. Tests that only make sense in one mode
// (a famd restart, revocation events, a wrong cluster token) are written
// for it alone and say why.

// mode is one way of serving the API.
type mode struct {
	name string
	famd bool // served by an in-process famd (core/embed)
	tcp  bool // the famd is reached over TCP with a cluster token, not its Unix socket
}

var (
	embedded = mode{name: "embedded"}
	famdUnix = mode{name: "famd", famd: true}
	famdTCP  = mode{name: "famd-tcp", famd: true, tcp: true}
	modes    = []mode{embedded, famdUnix, famdTCP}
)

// suiteToken is the cluster token of the famd modes' TCP listeners.
const suiteToken = "core-suite-token-0123456789"

// testEnv is one mode's instance for one test: it opens programs (core.Fam
// instances) against the mode's store, as this process's user or as
// another user, and restarts the store. Everything it opens is finalized
// and closed when the test ends.
type testEnv struct {
	t    *testing.T
	mode mode

	// embedded: the store's directories.
	dir string

	// famd: the running famd (nil until the first program is opened), the
	// options it was started with (kept to restart it on the same data at
	// the same addresses), the token file clients read, and the identity
	// famd gives TCP callers (nil: famd's own uid and gid).
	d        *embed.Famd
	fo       embed.Options
	token    string
	identity *rpc.Identity
}

// forEachMode runs fn as a subtest for each mode, named after the mode.
func forEachMode(t *testing.T, fn func(t *testing.T, env *testEnv)) {
	t.Helper()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { fn(t, newEnv(t, m)) })
	}
}

// newEnv prepares mode m for test t; famd starts with the first program.
func newEnv(t *testing.T, m mode) *testEnv {
	t.Helper()
	env := &testEnv{t: t, mode: m, dir: t.TempDir()}
	if m.famd {
		// Unix socket paths are limited to 107 bytes, which a subtest's
		// TempDir under a long test name can exceed: keep the sockets
		// under a short directory of their own.
		sock, err := os.MkdirTemp("", "famsuite-")
		if err != nil {
			t.Fatalf("socket directory: %v", err)
		}
		t.Cleanup(func() {
			if err := os.RemoveAll(sock); err != nil {
				t.Errorf("removing the socket directory: %v", err)
			}
		})
		env.fo = embed.Options{DataDir: filepath.Join(env.dir, "famd", "data"), ShmDir: filepath.Join(env.dir, "famd", "shm"),
			BackupDir: filepath.Join(env.dir, "famd", "backups"), SocketPath: filepath.Join(sock, "famd.sock"),
			TCPAddr: "127.0.0.1:0", Token: suiteToken}
		env.token = filepath.Join(env.dir, "token")
		if err := os.WriteFile(env.token, []byte(suiteToken+"\n"), 0o600); err != nil {
			t.Fatalf("token file: %v", err)
		}
	}
	return env
}

// local says whether items are mapped into this process in this mode
// (Item.Local, Item.Map): embedded, or famd on the same host's Unix
// socket; not over TCP.
func (env *testEnv) local() bool { return !env.mode.tcp }

// start starts the famd when it is not running, on the same directories
// and (after a first start) the same addresses as before.
func (env *testEnv) start() {
	t := env.t
	t.Helper()
	if env.d != nil {
		return
	}
	env.fo.TCPIdentity = env.identity
	d, err := embed.Start(env.fo)
	if err != nil {
		t.Fatalf("embed.Start: %v", err)
	}
	if env.fo.TCPAddr == "127.0.0.1:0" {
		env.fo.TCPAddr, env.fo.DataTCPAddr = d.Addr(), d.DataAddr()
		// Registered once; it closes whichever famd runs at the end,
		// after every program (registered later, so finalized first).
		t.Cleanup(func() {
			if env.d != nil {
				if err := env.d.Close(); err != nil {
					t.Errorf("closing famd: %v", err)
				}
			}
		})
	}
	env.d = d
}

// restart makes the store start again from what it kept: famd is closed
// and started again on the same data directory (its programs reconnect);
// an embedded store is reopened by the next Initialize anyway, so there is
// nothing to do. Call it with no program of this user open where the test
// wants a fresh start.
func (env *testEnv) restart() {
	t := env.t
	t.Helper()
	if env.d == nil {
		return
	}
	if err := env.d.Close(); err != nil {
		t.Fatalf("closing famd for a restart: %v", err)
	}
	env.d = nil
	env.start()
}

// options are the Options of a program of this process's user in this
// mode, for tests that set more before calling initialize.
func (env *testEnv) options() core.Options {
	o := core.DefaultOptions()
	o.PEID, o.PECount = 0, 1
	if !env.mode.famd {
		o.DataDir, o.ShmDir, o.BackupDir = env.dir+"/data", env.dir+"/shm", env.dir+"/backups"
		return o
	}
	env.start()
	o.Timeout = 60 * time.Second
	if env.mode.tcp {
		o.Server, o.TokenFile = env.d.Addr(), env.token
	} else {
		o.Server = "unix:" + env.d.SocketPath()
	}
	return o
}

// initialize is core.Initialize; a program it opens is finalized when the
// test ends (unless the test finalized it itself).
func (env *testEnv) initialize(o core.Options) (*core.Fam, error) {
	t := env.t
	t.Helper()
	f, err := core.Initialize(o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := f.Finalize(); err != nil && core.CodeOf(err) != core.CodeInvalid {
			t.Errorf("finalize at the end of the test: %v", err)
		}
	})
	return f, nil
}

// open opens a program of this process's user.
func (env *testEnv) open() *core.Fam {
	env.t.Helper()
	return mustV(env.initialize(env.options()))(env.t, "Initialize")
}

// serveAs makes famd give its TCP callers uid and gid, restarting it if
// it runs with another identity: famd knows one identity for every TCP
// caller with the cluster token, so a test acting as a second other user
// needs a restart (its programs on the Unix socket reconnect).
func (env *testEnv) serveAs(uid, gid uint32) {
	id := &rpc.Identity{UID: uid, GID: gid}
	if env.identity != nil && *env.identity == *id {
		return
	}
	env.identity = id
	if env.d != nil {
		env.restart()
	}
}

// otherUser says which other user the test acts as first (see as and
// openAs), so that famd starts with that TCP identity rather than
// restarting for it once programs are open. It does nothing in the modes
// where acting as another user needs no famd identity (embedded) or
// cannot be done (famd-tcp, see otherUserMode).
func (env *testEnv) otherUser(uid, gid uint32) {
	if env.mode.famd && !env.mode.tcp {
		env.serveAs(uid, gid)
	}
}

// otherUserMode skips a test that needs a user other than this process's
// in the famd-tcp mode, where this process's own programs are famd's one
// TCP identity, so no second one exists.
func (env *testEnv) otherUserMode() {
	if env.mode.tcp {
		env.t.Skip("famd gives every TCP caller one identity, this program's own: acting as another user needs the Unix socket beside TCP (mode famd)")
	}
}

// as returns a program acting as user uid of group gid beside f: in the
// embedded mode f's view as that user (Fam.As, same instance); with famd
// a client over TCP that famd knows as that user (famd gives no program a
// say in who it is), beside f on the Unix socket.
func (env *testEnv) as(f *core.Fam, uid, gid uint32) *core.Fam {
	t := env.t
	t.Helper()
	env.otherUserMode()
	if !env.mode.famd {
		return f.As(uid, gid)
	}
	return env.tcpClientAs(uid, gid)
}

// openAs opens a program of its own acting as user uid of group gid: in
// the embedded mode an instance on the same store with Options.UID and
// GID; with famd a TCP client famd knows as that user.
func (env *testEnv) openAs(uid, gid uint32) *core.Fam {
	t := env.t
	t.Helper()
	env.otherUserMode()
	if !env.mode.famd {
		o := env.options()
		o.UID, o.GID = int(uid), int(gid)
		return mustV(env.initialize(o))(t, "Initialize as another user")
	}
	return env.tcpClientAs(uid, gid)
}

func (env *testEnv) tcpClientAs(uid, gid uint32) *core.Fam {
	t := env.t
	t.Helper()
	env.serveAs(uid, gid)
	env.start()
	o := core.DefaultOptions()
	o.PEID, o.PECount = 0, 1
	o.Server, o.TokenFile, o.Timeout = env.d.Addr(), env.token, 60*time.Second
	return mustV(env.initialize(o))(t, "Initialize over TCP as another user")
}

// awaitRevocation waits, with famd, until the revocation of key (the
// handle's key before another program changed the item's permissions) has
// reached handle it: a famd client learns of a permission change made by
// another program from famd's revocation event on its session stream, and
// until it has handled the event it acts on the rights it had (a grant is
// not seen at once; famd itself refuses what was taken away). The embedded
// store's handles see a change at once: nothing to wait for.
func (env *testEnv) awaitRevocation(it *core.Item, key [16]byte) {
	t := env.t
	t.Helper()
	if !env.mode.famd {
		return
	}
	waitFor(t, "famd's revocation event to reach the other program's handle", func() bool { return core.KeyOf(it) != key })
}

// must fails the test when err is not nil, naming the call.
func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// mustV takes a call's value and error; the function it returns fails the
// test when the error is not nil, naming the call, and returns the value:
// it := mustV(r.Allocate("a", 64, 0o600))(t, "allocate a").
func mustV[T any](v T, err error) func(t testing.TB, what string) T {
	return func(t testing.TB, what string) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

// code fails the test unless err has code want.
func code(t testing.TB, err error, want core.Code) {
	t.Helper()
	if core.CodeOf(err) != want {
		t.Fatalf("got %v (code %d), want code %d (%v)", err, core.CodeOf(err), want, want)
	}
}

// startFamd starts an in-process famd for a famd-only test, closed when
// the test ends (a test may close it earlier itself).
func startFamd(t *testing.T, o embed.Options) *embed.Famd {
	t.Helper()
	d, err := embed.Start(o)
	if err != nil {
		t.Fatalf("embed.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("closing famd: %v", err)
		}
	})
	return d
}

// client opens a famd client as PE 0 of 1 (tokenFile for a TCP server),
// finalized when the test ends unless the test finalized it already.
func client(t *testing.T, server, tokenFile string) *core.Fam {
	t.Helper()
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout = server, tokenFile, 60*time.Second
	o.PEID, o.PECount = 0, 1
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatalf("Initialize(%s): %v", server, err)
	}
	t.Cleanup(func() {
		if err := f.Finalize(); err != nil && core.CodeOf(err) != core.CodeInvalid {
			t.Errorf("finalize at the end of the test: %v", err)
		}
	})
	return f
}

// writeToken writes a cluster token file and returns its path.
func writeToken(t *testing.T, tok string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60s for %s", what)
		}
	}
}

// writeFile writes s and a newline to path, readable by its owner only.
func writeFile(path, s string) error { return os.WriteFile(path, []byte(s+"\n"), 0o600) }

// ptr is the address of b's first byte, as fam_map returned it.
func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
