package embed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/fabric"
	"github.com/gofam/openfam/core/memserver"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// MemoryOptions configure StartMemory.
type MemoryOptions struct {
	// DataDir holds persistent segments and the server's identity.
	// Required.
	DataDir string
	// ShmDir holds volatile segments ("" = memserver's default).
	ShmDir string
	// TCPAddr is the control service's listen address (host:port; port 0
	// picks one). Required: the metadata service calls it.
	TCPAddr string
	// DataTCPAddr is the data plane's TCP listen address; "" means
	// TCPAddr's host at its port + 1 (any free port when that is 0).
	DataTCPAddr string
	// DataSocketPath, when set, also serves the data plane on a Unix
	// socket for clients on this host.
	DataSocketPath string
	// Advertise is the host clients and the metadata service reach this
	// server at; "" means the TCP listen host, which must then not be a
	// wildcard address.
	Advertise string
	// Join is the metadata service: "unix:PATH" or "HOST:PORT".
	Join string
	// Token is the cluster token: TCP data-plane clients present it, and
	// this server presents it when joining over TCP.
	Token string
	// ServerToken is the metadata service's server token: this server
	// proves it holds it when joining (famauth.ServerProof). Needed to
	// join over TCP, and on the Unix socket of a metadata service that
	// has one.
	ServerToken string
	// ShutdownTimeout bounds the graceful part of Close; default 5s.
	ShutdownTimeout time.Duration
	// Logf receives one line per notable event; nil is silent.
	Logf func(format string, args ...any)
	// WarnLogf, MaxConnsPerPeer and DataSpin are as in Options; DataSpin
	// is also how long a forward to a peer memory server polls for its
	// reply (memserver.Options.PeerSpin).
	WarnLogf        func(format string, args ...any)
	MaxConnsPerPeer int
	DataSpin        time.Duration
	// DataObserver, when set, is told of every data-plane request
	// answered (famd --metrics-listen).
	DataObserver transport.Observer
	// Provider is the data plane's libfabric provider (famd --provider):
	// "" or "tcp", the project's own TCP protocol only; otherwise an
	// endpoint on it exposes the server's keys (fabric.go).
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

// Memory is a running memory server (famd --role memory). Its methods are
// safe for concurrent use.
type Memory struct {
	opts     MemoryOptions
	ms       *memserver.Server
	grpc     *grpc.Server
	dataTCP  *transport.Server
	dataUx   *transport.Server
	fabric   *fabric.Endpoint // the libfabric endpoint, or nil
	unlock   func()
	addr     string
	dataAddr string
	dataSock string
	failed   chan error
	joined   chan struct{}
	stop     chan struct{}

	mu sync.Mutex
	id uint64

	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// StartMemory starts a memory server: it listens, then registers with
// the metadata service in the background, retrying until it answers
// (Joined tells when). On error nothing stays open.
func StartMemory(opts MemoryOptions) (_ *Memory, err error) {
	if opts.DataDir == "" || opts.TCPAddr == "" || opts.Join == "" {
		return nil, errors.New("a memory server needs a data directory, a TCP address and a metadata service to join")
	}
	if opts.Token == "" {
		return nil, errors.New("a memory server serves TCP: it needs the cluster token")
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	m := &Memory{opts: opts, failed: make(chan error, 4), joined: make(chan struct{}), stop: make(chan struct{})}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	unlock, err := lockDataDir(opts.DataDir)
	if err != nil {
		return nil, err
	}
	m.unlock = unlock
	cleanup = append(cleanup, unlock)
	ms, err := memserver.New(memserver.Options{DataDir: opts.DataDir, ShmDir: opts.ShmDir, Logf: opts.Logf, Token: opts.Token,
		PeerSpin: opts.DataSpin})
	if err != nil {
		return nil, err
	}
	m.ms = ms
	cleanup = append(cleanup, ms.Close)
	ctl, err := net.Listen("tcp", opts.TCPAddr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", opts.TCPAddr, err)
	}
	cleanup = append(cleanup, func() { ctl.Close() })
	daddr := opts.DataTCPAddr
	if daddr == "" {
		if daddr, err = nextPort(opts.TCPAddr); err != nil {
			return nil, err
		}
	}
	dl, err := net.Listen("tcp", daddr)
	if err != nil {
		return nil, fmt.Errorf("listening for the data plane on %s: %w", daddr, err)
	}
	cleanup = append(cleanup, func() { dl.Close() })
	var ul net.Listener
	if opts.DataSocketPath != "" {
		if ul, err = listenUnix(opts.DataSocketPath); err != nil {
			return nil, err
		}
		cleanup = append(cleanup, func() { ul.Close() })
		m.dataSock = opts.DataSocketPath
	}
	host := opts.Advertise
	if host == "" {
		h, _, _ := net.SplitHostPort(opts.TCPAddr)
		if ip := net.ParseIP(h); h == "" || ip != nil && ip.IsUnspecified() {
			return nil, fmt.Errorf("listening on %s (every interface): give the address to advertise to clients", opts.TCPAddr)
		}
		host = h
	}
	_, cport, _ := net.SplitHostPort(ctl.Addr().String())
	_, dport, _ := net.SplitHostPort(dl.Addr().String())
	m.addr, m.dataAddr = net.JoinHostPort(host, cport), net.JoinHostPort(host, dport)

	fab := opts.Fabric
	if fab != nil {
		ms.SetFabric(fab)
	} else if m.fabric, err = openFabric(opts.Provider, host, opts.Device, opts.Logf); err != nil {
		return nil, err
	}
	if m.fabric != nil {
		cleanup = append(cleanup, func() { m.fabric.Close() })
		fab = m.fabric
		ms.SetFabric(fab)
	}
	m.grpc = grpc.NewServer(grpc.UnaryInterceptor(ms.UnaryInterceptor))
	pb.RegisterMemoryServer(m.grpc, ms)
	m.dataTCP = transport.NewServer(ms, transport.ServerOptions{Token: opts.Token, Logf: opts.Logf, Fabric: fab,
		Warnf: opts.WarnLogf, MaxConnsPerPeer: opts.MaxConnsPerPeer, Observer: opts.DataObserver, Spin: opts.DataSpin})
	if ul != nil {
		m.dataUx = transport.NewServer(ms, transport.ServerOptions{Logf: opts.Logf, Fabric: fab,
			Warnf: opts.WarnLogf, MaxConnsPerPeer: opts.MaxConnsPerPeer, Observer: opts.DataObserver, Spin: opts.DataSpin})
	}
	serve := func(what string, fn func(net.Listener) error, l net.Listener) {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if err := fn(l); err != nil {
				select {
				case m.failed <- fmt.Errorf("%s on %s: %w", what, l.Addr(), err):
				default:
				}
			}
		}()
	}
	serve("gRPC", m.grpc.Serve, ctl)
	serve("data plane", m.dataTCP.Serve, dl)
	if ul != nil {
		serve("data plane", m.dataUx.Serve, ul)
	}
	m.wg.Add(1)
	go m.joinLoop()
	return m, nil
}

func (m *Memory) logf(format string, args ...any) {
	if m.opts.Logf != nil {
		m.opts.Logf(format, args...)
	}
}

// joinLoop registers with the metadata service, retrying every half
// second (logging the first failure and then every twentieth) until it
// succeeds or the server closes. A refusal for want of the right server
// credential is final: it is reported on Failed, since retrying with the
// same credential cannot succeed and would fill the metadata famd's log.
func (m *Memory) joinLoop() {
	defer m.wg.Done()
	host, _ := os.Hostname()
	req := &pb.JoinRequest{Uuid: m.ms.UUID(), Control: m.addr, DataTcp: m.dataAddr, DataUnix: m.dataSock,
		Hostname: host, Secret: []byte(m.ms.Secret())}
	if fab := m.fabricServer(); fab != nil {
		req.Provider, req.FabricAddr = fab.Provider(), fab.Addr()
	}
	for attempt := 0; ; attempt++ {
		id, err := m.join(req)
		if err == nil {
			m.mu.Lock()
			m.id = id
			m.mu.Unlock()
			close(m.joined)
			m.logf("famd: joined the metadata service at %s as memory server %d", m.opts.Join, id)
			return
		}
		var refused joinRefused
		if errors.As(err, &refused) {
			select {
			case m.failed <- fmt.Errorf("the metadata famd at %s refused this memory server: %w", m.opts.Join, err):
			default:
			}
			return
		}
		if attempt%20 == 0 {
			m.logf("famd: joining the metadata service at %s: %v (retrying)", m.opts.Join, err)
		}
		select {
		case <-m.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// joinRefused is a join the metadata service refused with FAM_ERR_NOPERM.
type joinRefused struct{ msg string }

func (e joinRefused) Error() string { return e.msg }

func (m *Memory) join(req *pb.JoinRequest) (uint64, error) {
	var conn *grpc.ClientConn
	var err error
	if path, ok := strings.CutPrefix(m.opts.Join, "unix:"); ok {
		conn, err = rpc.DialUnix(path, time.Second)
	} else {
		// A join is authorised by the server token, never as a user:
		// MUNGE has no part in it.
		conn, err = rpc.DialTCP(strings.TrimPrefix(m.opts.Join, "tcp://"),
			&famauth.Client{Token: m.opts.Token, Mode: famauth.ModeToken}, time.Second)
	}
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m.opts.ServerToken != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, famauth.MDServerProof,
			famauth.ServerProof(m.opts.ServerToken, rpc.JoinProofFields(req)...))
	}
	rep, err := pb.NewFamClient(conn).Join(ctx, req)
	if err != nil {
		return 0, err
	}
	if fe := rep.GetErr(); fe.GetCode() != 0 {
		if core.Code(fe.GetCode()) == core.CodeNoPerm {
			return 0, joinRefused{fe.GetMsg()}
		}
		return 0, errors.New(fe.GetMsg())
	}
	return rep.GetServerId(), nil
}

// Joined is closed once the metadata service accepted this server.
func (m *Memory) Joined() <-chan struct{} { return m.joined }

// ID is the server id the metadata service gave (0 before Joined).
func (m *Memory) ID() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// Addr is the control service's advertised address.
func (m *Memory) Addr() string { return m.addr }

// DataAddr is the data plane's advertised TCP address.
func (m *Memory) DataAddr() string { return m.dataAddr }

// DataSocketPath is the data-plane Unix socket ("" for none).
func (m *Memory) DataSocketPath() string { return m.dataSock }

// DataDir is the server's data directory.
func (m *Memory) DataDir() string { return m.opts.DataDir }

// Server is the memory server itself (for tests that inspect keys).
func (m *Memory) Server() *memserver.Server { return m.ms }

// Failed delivers an error when a listener stops serving on its own.
func (m *Memory) Failed() <-chan error { return m.failed }

// Close stops joining and serving and unmaps every segment (persistent
// ones are flushed and stay for the next start).
func (m *Memory) Close() error {
	m.closeOnce.Do(func() {
		close(m.stop)
		stopped := make(chan struct{})
		go func() {
			m.grpc.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(m.opts.ShutdownTimeout):
			m.grpc.Stop()
			<-stopped
		}
		var errs []error
		for _, ts := range []*transport.Server{m.dataTCP, m.dataUx} {
			if ts != nil {
				if err := ts.Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		m.wg.Wait()
		m.ms.Close() // withdraws every key first
		if err := closeFabric(m.fabric); err != nil {
			errs = append(errs, err)
		}
		m.unlock()
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}
