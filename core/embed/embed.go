// Package embed runs a famd inside a Go program: the same control plane
// (package rpc over gRPC) and data plane (package transport) as the famd
// command, on a Unix socket and optionally TCP. cmd/famd is a thin shell
// around it; tests of other packages use it to get a real server.
package embed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/fabric"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	"github.com/gofam/openfam/internal/munge"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Options configure Start. The zero value serves a fresh temporary data
// directory on a temporary Unix socket.
type Options struct {
	// DataDir holds the metadata store and persistent regions. "" makes a
	// temporary directory that Close removes.
	DataDir string
	// ShmDir and BackupDir default as in core.Options ("" = the core's
	// default; with a temporary DataDir, directories inside it).
	ShmDir, BackupDir string
	// SocketPath is the gRPC Unix socket. "" puts one in a temporary
	// directory, unless NoSocket is set.
	SocketPath string
	// DataSocketPath is the data-plane Unix socket; "" means
	// SocketPath + ".data".
	DataSocketPath string
	// NoSocket serves TCP only (TCPAddr must be set).
	NoSocket bool
	// TCPAddr, when not "", is the gRPC TCP listen address (host:port;
	// port 0 picks one). Token must then be set.
	TCPAddr string
	// DataTCPAddr is the data-plane TCP listen address; "" means TCPAddr's
	// host at its port + 1 (or any free port when TCPAddr's port is 0).
	DataTCPAddr string
	// Token is the cluster token TCP clients present on both planes.
	Token string
	// Auth, TCPIdentity and MungeSocket say who a TCP caller is (see
	// rpc.Options): by default every TCP caller holding the token is
	// this process's uid and gid; Auth "munge" authenticates each one
	// with MUNGE instead.
	Auth        string
	TCPIdentity *rpc.Identity
	MungeSocket string
	// ServerToken is the credential memory servers must prove when they
	// join ("" accepts them only on the Unix socket, from this process's
	// uid). Clients never get it.
	ServerToken string
	// DefaultMemoryType applies to regions created with MemoryDefault
	// (core's default, volatile, when zero).
	DefaultMemoryType core.MemoryType
	// Persist and PersistInterval are famd's own persistence policy (see
	// core.Options): when its catalogue of persistent regions is made
	// durable, and how the copies it runs are flushed. Clients' commits
	// are honoured whatever the policy.
	Persist         core.PersistPolicy
	PersistInterval time.Duration
	// ShutdownTimeout bounds the graceful part of Close: in-flight calls
	// still running after it are cancelled. Default 5s.
	ShutdownTimeout time.Duration
	// Logf receives one line per notable event; nil is silent.
	Logf func(format string, args ...any)
	// Role is "all" (the default: metadata, and memory for regions not on
	// memory servers) or "metadata" (every region on memory servers that
	// joined; see rpc.Cluster for the placement policy). Memory servers
	// run with StartMemory.
	Role string
	// InterleaveSize is the block size of regions interleaved over memory
	// servers; 0 means rpc.DefaultInterleaveSize.
	InterleaveSize uint64
	// ClusterLogf receives the events an operator wants to see: memory
	// servers joining, revocations owed, regions created and destroyed,
	// client sessions, volatile regions lost to a reboot; nil means Logf.
	ClusterLogf func(format string, args ...any)
	// Health tunes how famd decides a memory server is down and rebuilds
	// it (issue 16); zero values take rpc.HealthOptions' defaults.
	Health rpc.HealthOptions
	// WarnLogf receives warnings: refused joins and credentials, and data
	// connections refused over MaxConnsPerPeer; nil means ClusterLogf.
	WarnLogf func(format string, args ...any)
	// MaxConnsPerPeer caps the data-plane connections one uid (Unix
	// socket) or source address (TCP) may hold; see
	// transport.ServerOptions.MaxConnsPerPeer (0: its default).
	MaxConnsPerPeer int
	// DataSpin is how long the data plane polls a connection for its next
	// request after answering one (transport.ServerOptions.Spin; famd
	// --spin); 0 never polls.
	DataSpin time.Duration
	// CallObserver and DataObserver, when set, are told of every control
	// call and data-plane request answered (famd --metrics-listen).
	CallObserver rpc.Observer
	DataObserver transport.Observer
	// Provider is the data plane's libfabric provider (famd --provider;
	// fabric.go): "" or "tcp", the project's own TCP protocol only;
	// otherwise role all opens an endpoint on it for its own regions
	// (role metadata holds none, and only announces it).
	Provider string
	// Device is the fabric domain of Provider's endpoint (famd
	// --if-device, OpenFAM's if_device: fabric.Options.Device); "" lets
	// the provider choose.
	Device string
	// Fabric, when set, is an endpoint already open to use instead of
	// opening one on Provider (tests give a double); Close leaves it
	// open.
	Fabric transport.FabricServer
}

// Famd is a running in-process famd. Its methods are safe for concurrent
// use.
type Famd struct {
	opts    Options
	fam     *core.Fam
	srv     *rpc.Server
	cluster *rpc.Cluster
	grpc    *grpc.Server
	dataUx  *transport.Server
	dataTCP *transport.Server
	fabric  *fabric.Endpoint // famd's own libfabric endpoint, or nil
	tmp     string           // temporary directory owned by this Famd, or ""
	unlock  func()           // releases the data directory's famd lock

	sock, dataSock string
	addr, dataAddr string
	failed         chan error
	closeOnce      sync.Once
	closeErr       error
	wg             sync.WaitGroup
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Start opens the data directory (failing fast, with the core's
// CodeResource error, when another famd holds it), listens on every
// configured address and serves until Close. On error nothing stays open.
func Start(opts Options) (_ *Famd, err error) {
	if opts.NoSocket && opts.TCPAddr == "" {
		return nil, errors.New("famd needs a Unix socket or a TCP address to serve")
	}
	if opts.TCPAddr != "" && opts.Token == "" {
		return nil, errors.New("serving TCP needs a cluster token")
	}
	switch opts.Auth {
	case "", famauth.ModeToken:
	case famauth.ModeMunge:
		if opts.TCPIdentity != nil {
			return nil, errors.New("a TCP identity is for token authentication; with MUNGE each caller is who its credential says")
		}
		if err := munge.Available(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("authentication mode must be token or munge, not %q", opts.Auth)
	}
	if opts.ServerToken != "" && opts.ServerToken == opts.Token {
		return nil, errors.New("the server token must differ from the cluster token: every client holds the cluster token")
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	d := &Famd{opts: opts, failed: make(chan error, 4)}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	if opts.DataDir == "" || (!opts.NoSocket && opts.SocketPath == "") {
		// Unix socket paths are limited to 107 bytes: keep the directory
		// short rather than under a long $TMPDIR.
		d.tmp, err = os.MkdirTemp(shortTempRoot(), "famd-")
		if err != nil {
			return nil, err
		}
		cleanup = append(cleanup, func() { os.RemoveAll(d.tmp) })
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(d.tmp, "data")
		if opts.ShmDir == "" {
			opts.ShmDir = filepath.Join(d.tmp, "shm")
		}
	}
	if !opts.NoSocket && opts.SocketPath == "" {
		opts.SocketPath = filepath.Join(d.tmp, "famd.sock")
	}
	if !opts.NoSocket && opts.DataSocketPath == "" {
		opts.DataSocketPath = opts.SocketPath + ".data"
	}
	d.opts = opts

	unlock, err := lockDataDir(opts.DataDir)
	if err != nil {
		return nil, err
	}
	d.unlock = unlock
	cleanup = append(cleanup, unlock)

	if opts.Role == "" {
		opts.Role = "all"
		d.opts.Role = "all"
	}
	clusterLogf := opts.ClusterLogf
	if clusterLogf == nil {
		clusterLogf = opts.Logf
	}
	cl, err := rpc.NewCluster(rpc.ClusterOptions{DataDir: opts.DataDir, Role: opts.Role,
		InterleaveSize: opts.InterleaveSize, Logf: clusterLogf, Token: opts.Token, Health: opts.Health})
	if err != nil {
		return nil, err
	}
	d.cluster = cl
	cleanup = append(cleanup, cl.Close)
	fam, err := core.Initialize(core.Options{Group: "famd", DataDir: opts.DataDir, ShmDir: opts.ShmDir,
		BackupDir: opts.BackupDir, DefaultMemoryType: opts.DefaultMemoryType,
		UID: -1, GID: -1, PEID: 0, PECount: 1, Placer: cl,
		Persist: opts.Persist, PersistInterval: opts.PersistInterval})
	if err != nil {
		return nil, err
	}
	d.fam = fam
	cleanup = append(cleanup, func() { fam.Finalize() })
	if clusterLogf != nil {
		for _, name := range fam.LostVolatileRegions() {
			clusterLogf("famd: dropped volatile region %q: its memory did not survive the restart (its file in the shm directory is gone)", name)
		}
	}

	var grpcLns, uxLns, tcpLns []net.Listener
	closeAll := func(ls []net.Listener) {
		for _, l := range ls {
			l.Close()
		}
	}
	cleanup = append(cleanup, func() { closeAll(grpcLns); closeAll(uxLns); closeAll(tcpLns) })
	if !opts.NoSocket {
		l, err := listenUnix(opts.SocketPath)
		if err != nil {
			return nil, err
		}
		grpcLns = append(grpcLns, l)
		d.sock = opts.SocketPath
		if l, err = listenUnix(opts.DataSocketPath); err != nil {
			return nil, err
		}
		uxLns = append(uxLns, l)
		d.dataSock = opts.DataSocketPath
	}
	if opts.TCPAddr != "" {
		l, err := net.Listen("tcp", opts.TCPAddr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", opts.TCPAddr, err)
		}
		grpcLns = append(grpcLns, l)
		d.addr = l.Addr().String()
		daddr := opts.DataTCPAddr
		if daddr == "" {
			if daddr, err = nextPort(opts.TCPAddr); err != nil {
				return nil, err
			}
		}
		if l, err = net.Listen("tcp", daddr); err != nil {
			return nil, fmt.Errorf("listening for the data plane on %s: %w", daddr, err)
		}
		tcpLns = append(tcpLns, l)
		d.dataAddr = l.Addr().String()
	}

	warnf := opts.WarnLogf
	if warnf == nil {
		warnf = clusterLogf
	}
	fab := opts.Fabric
	if fab == nil && opts.Role != "metadata" {
		host, _, _ := net.SplitHostPort(d.addr)
		if d.fabric, err = openFabric(opts.Provider, host, opts.Device, opts.Logf); err != nil {
			return nil, err
		}
		if d.fabric != nil {
			cleanup = append(cleanup, func() { d.fabric.Close() })
			fab = d.fabric
		}
	}
	d.srv = rpc.NewServer(rpc.Options{Fabric: fab, Provider: opts.Provider, Fam: fam, Token: opts.Token, DataTCP: d.dataAddr,
		DataUnix: d.dataSock, DataDir: opts.DataDir, Cluster: cl, Auth: opts.Auth, TCPIdentity: opts.TCPIdentity,
		MungeSocket: opts.MungeSocket, ServerToken: opts.ServerToken, Logf: opts.Logf, Infof: clusterLogf, Warnf: warnf,
		Observer: opts.CallObserver})
	d.grpc = grpc.NewServer(d.srv.ServerOptions()...)
	pb.RegisterFamServer(d.grpc, d.srv)
	logf := opts.Logf
	if len(uxLns) > 0 {
		d.dataUx = transport.NewServer(d.srv, transport.ServerOptions{FDs: d.srv, Control: d.srv, Logf: logf, Fabric: fab,
			Warnf: warnf, MaxConnsPerPeer: opts.MaxConnsPerPeer, Observer: opts.DataObserver, Spin: opts.DataSpin})
	}
	if len(tcpLns) > 0 {
		d.dataTCP = transport.NewServer(d.srv, transport.ServerOptions{Token: opts.Token, Control: d.srv, Logf: logf, Fabric: fab,
			Warnf: warnf, MaxConnsPerPeer: opts.MaxConnsPerPeer, Observer: opts.DataObserver, Spin: opts.DataSpin})
	}
	serve := func(what string, fn func(net.Listener) error, l net.Listener) {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if err := fn(l); err != nil {
				opts.logf("famd: %s on %s stopped: %v", what, l.Addr(), err)
				select {
				case d.failed <- fmt.Errorf("%s on %s: %w", what, l.Addr(), err):
				default:
				}
			}
		}()
	}
	for _, l := range grpcLns {
		serve("gRPC", d.grpc.Serve, l)
	}
	for _, l := range uxLns {
		serve("data plane", d.dataUx.Serve, l)
	}
	for _, l := range tcpLns {
		serve("data plane", d.dataTCP.Serve, l)
	}
	return d, nil
}

// lockDataDir takes famd's lock on dir (creating dir if needed), so that a
// second famd on the same data directory fails at once with a message
// naming the holder, before the core waits on its store lock.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "famd.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another famd (pid %s)", dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("data directory lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}

// shortTempRoot is os.TempDir unless that is too long for socket paths.
func shortTempRoot() string {
	if t := os.TempDir(); len(t) < 60 {
		return t
	}
	return "/tmp"
}

// listenUnix listens on path, replacing a stale socket file left by a
// famd that died, but never one another server still answers on.
func listenUnix(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("another server is listening on %s", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("checking the old socket %s: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	// Every local user may connect: the kernel tells famd who they are and
	// the core's permission checks decide what they may do.
	if err := os.Chmod(path, 0o666); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// nextPort returns addr's host with port + 1 (port 0 stays 0).
func nextPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("TCP address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65534 {
		return "", fmt.Errorf("TCP address %q: port must be a number below 65535", addr)
	}
	if p > 0 {
		p++
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// Addr is the gRPC TCP address served ("" without TCP).
func (d *Famd) Addr() string { return d.addr }

// DataAddr is the data-plane TCP address served ("" without TCP).
func (d *Famd) DataAddr() string { return d.dataAddr }

// SocketPath is the gRPC Unix socket ("" with NoSocket). Clients name it
// as OPENFAM_SERVER=unix:<path>.
func (d *Famd) SocketPath() string { return d.sock }

// DataSocketPath is the data-plane Unix socket ("" with NoSocket).
func (d *Famd) DataSocketPath() string { return d.dataSock }

// DataDir is the data directory served.
func (d *Famd) DataDir() string { return d.opts.DataDir }

// Cluster is the memory servers' membership (for tests, and to plug in
// the rebuild call: Cluster().SetRebuilder).
func (d *Famd) Cluster() *rpc.Cluster { return d.cluster }

// Server is the control-plane service (for tests that inspect keys).
func (d *Famd) Server() *rpc.Server { return d.srv }

// Regions counts the regions in the data directory.
func (d *Famd) Regions() (int, error) { return d.srv.RegionCount() }

// Failed delivers an error when a listener stops serving on its own (not
// through Close); famd exits on it.
func (d *Famd) Failed() <-chan error { return d.failed }

// Close stops serving: barrier waiters are released, the gRPC server
// stops gracefully within ShutdownTimeout (then forcibly), the data plane
// closes its connections, every key is revoked and the instance is
// finalized (persistent regions stay in the data directory). It returns
// the first error met; later calls return the same.
func (d *Famd) Close() error {
	d.closeOnce.Do(func() {
		d.srv.Drain()
		stopped := make(chan struct{})
		go func() {
			d.grpc.GracefulStop()
			close(stopped)
		}()
		t := time.NewTimer(d.opts.ShutdownTimeout)
		select {
		case <-stopped:
		case <-t.C:
			d.opts.logf("famd: calls still running after %v; cancelling them", d.opts.ShutdownTimeout)
			d.grpc.Stop()
			<-stopped
		}
		t.Stop()
		var errs []error
		for _, ts := range []*transport.Server{d.dataUx, d.dataTCP} {
			if ts != nil {
				if err := ts.Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		d.wg.Wait()
		d.srv.Close()
		// Every key is withdrawn by now; the endpoint goes before the
		// memory its registrations reached is unmapped.
		if err := closeFabric(d.fabric); err != nil {
			errs = append(errs, err)
		}
		if err := d.fam.Finalize(); err != nil {
			errs = append(errs, err)
		}
		d.cluster.Close()
		d.unlock()
		if d.tmp != "" {
			if err := os.RemoveAll(d.tmp); err != nil {
				errs = append(errs, err)
			}
		}
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}
