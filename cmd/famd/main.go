// Command famd serves OpenFAM regions and data items to processes on this
// host (a Unix socket) and across the network (TCP): the control plane on
// gRPC (spec/proto/openfam/v1/fam.proto), the data plane on the binary
// protocol of spec/wire.md. With --role metadata and --role memory one
// famd keeps names and permissions and others hold the bytes, striped over
// them (core/embed). See --help.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/bytesize"
	"github.com/gofam/openfam/internal/metrics"
	"github.com/gofam/openfam/internal/version"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // could not start, or a listener failed
	exitUsage   = 2 // bad flags, or flags that do not fit the role
)

const usageHead = `Usage: famd [flags]

famd serves OpenFAM memory (region heaps in mapped files under the data
directory) and metadata (names, permissions; a bbolt store) to OpenFAM
programs. A program uses it when OPENFAM_SERVER names it:
  OPENFAM_SERVER=unix:PATH      same host: identity from the kernel, items
                                mapped from descriptors famd passes
  OPENFAM_SERVER=HOST:PORT      over TCP: needs OPENFAM_TOKEN_FILE

Serving TCP needs a cluster token: a file of one line, mode 0600, owned by
the user famd runs as, given to every client host. famd refuses to start
with a token file its group or others can read. Any string works (white
space around it is ignored); make one with 'famctl token new FILE' (32
random bytes as 64 hexadecimal digits, mode 0600).

Who a caller is (permission checks use it):
  Unix socket   the kernel says (SO_PEERCRED); nothing to configure.
  TCP, --auth token (the default)
                the token proves the host, not the user: every TCP client
                acts as ONE identity, --tcp-identity UID:GID (default:
                famd's own uid and gid; a famd running as root must be
                given one). A uid the client claims is never used.
  TCP, --auth munge
                each client is who its MUNGE credential says (libmunge2 and
                munged with the cluster's key on every host; clients find
                munged at $OPENFAM_MUNGE_SOCKET or libmunge's default). One
                credential per connection; the connection then carries a
                random session secret. Clients without MUNGE are refused.
  Memory servers (--role memory) join with the server token
                (--server-token-file, mode 0600, on the metadata famd and on
                every memory famd; never given to clients, and different
                from the cluster token). A metadata famd without one accepts
                memory servers only on its Unix socket from its own uid.

Roles (--role):
  all        metadata and memory in one daemon (the default). Regions stay
             in famd's own files until memory servers join; from then on
             interleaved regions are striped over the memory servers.
  metadata   names, permissions and placement only: every region is striped
             over the memory servers that joined (--interleave-size bytes
             per block), or placed on one of them when created with
             interleaving disabled. With no memory server, creating a
             region fails.
  memory     a memory server: holds region segments for the metadata famd
             named by --join and serves their bytes on the data plane.
             Needs --join, --listen, --token-file and, to join over TCP,
             --server-token-file; --socket names its
             data-plane Unix socket for clients on this host; --advertise
             says which host to announce when --listen is a wildcard
             address. A restart on the same data directory rejoins with the
             same server id and keeps its persistent segments.

Data plane (--provider):
  tcp        the project's own protocol over TCP and Unix sockets (the
             default; needs nothing installed). Same-host clients map the
             region files themselves (fam_map works).
  NAME       a libfabric provider (libfabric.so.1 loaded at run time;
             Debian: libfabric1, libfabric-bin): clients read and write
             the memory famd serves with one-sided RMA, and this protocol
             carries only control and what the provider cannot do. Every
             famd of a job and its PEs run the same one (famrun --provider
             or OPENFAM_PROVIDER sets both); a PE whose OPENFAM_PROVIDER
             names another is refused with both names. 'fi_info -l' lists
             the providers of a host. What each one does here:
               provider      fence           atomics            fam_map
               tcp           completions     famd's CPU         yes (same host)
               tcp;ofi_rxm   completions     emulated (famd)    no
               sockets       FI_FENCE        native             no
               shm           completions     emulated (famd)    no
               verbs;ofi_rxm completions     native (NIC)       no
             (verbs, cxi and efa need their hardware; "emulated": the
             provider has no FI_ATOMIC and famd does them, atomic with
             respect to each other.) Role metadata serves no region bytes
             and only announces the provider.
  --if-device (or OPENFAM_IF_DEVICE) picks the provider's fabric domain,
             as OpenFAM's if_device does: the PEs take theirs from
             Fam_Options.if_device, fam_pe_config.yaml's if_device or
             OPENFAM_IF_DEVICE. libfabric reads its own FI_* variables
             (FI_LOG_LEVEL, FI_TCP_IFACE, FI_SOCKETS_IFACE, FI_SHM_*...)
             from famd's environment and the PEs'; famrun passes its
             environment on to both.

For roles all and metadata at least one of --socket and --listen is
required. SIGTERM, SIGINT or SIGQUIT stops famd gracefully (exit status 0,
socket files removed); persistent regions stay in the data directory for
the next start. SIGHUP is logged and ignored: famd has no configuration
file to reload and logs to stderr. A second famd on the same data
directory fails at once.

The log (stderr) has one record per line with its time and level, as text
(time=... level=INFO msg="...") or JSON (--log-format json). At info: start,
stop and signals, regions created and destroyed, client sessions opened and
ended, volatile regions dropped because a reboot emptied --shm-dir, memory
servers joining. At warn: failed authentication (wrong token, MUNGE),
refused joins and connections, allocations that found no space, a data
directory owned by another user.

Flags:
`

const usageEnv = `
Environment:
  OPENFAM_DATA_DIR     default of --data-dir
  OPENFAM_SHM_DIR      default of --shm-dir
  OPENFAM_BACKUP_DIR   default of --backup-dir
  OPENFAM_TOKEN_FILE   default of --token-file
  OPENFAM_PERSIST      famd's persistence policy: quiet (default) or each make
                       a persistent region's creation and allocations durable
                       before they return, lazy does not (its copies then
                       flush every OPENFAM_PERSIST_INTERVAL, default 5s).
                       Clients' commits (fam_quiet) are honoured whatever it is
  NOTIFY_SOCKET        set by systemd for a Type=notify service: famd sends
                       READY=1 there once it serves, STOPPING=1 when it stops
                       (dist/systemd/famd.service, installed by make install)

Exit status: 0 after a graceful stop, 1 if famd could not start or a
listener failed, 2 for invalid flags (including flags that do not fit the
role).
`

type config struct {
	dataDir, shmDir, backupDir string
	listen, dataListen         string
	socket                     string
	tokenFile                  string
	serverTokenFile            string
	auth, tcpIdentity          string
	mungeSocket                string
	join, role, logLevel       string
	logFormat                  string
	advertise, interleave      string
	shutdownTimeout            time.Duration
	maxConnsPerPeer            int
	spin                       time.Duration
	metricsListen              string
	provider, ifDevice         string
	probeInterval              time.Duration
	probeFailures              int
}

func defaultDataDir() string {
	if d := os.Getenv("OPENFAM_DATA_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(os.TempDir(), "openfam-famd")
	}
	return filepath.Join(home, ".local", "share", "openfam-famd")
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is famd: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var c config
	fs := flag.NewFlagSet("famd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.dataDir, "data-dir", defaultDataDir(), "`DIR` holding the metadata store, persistent regions and backups; with --role memory\nthe persistent segments and the server's identity (default $OPENFAM_DATA_DIR,\nelse ~/.local/share/openfam-famd)")
	fs.StringVar(&c.listen, "listen", "", "serve gRPC on TCP at `tcp://HOST:PORT`; the data plane listens on HOST at PORT+1\nunless --data-listen says otherwise (needs --token-file); port 0 picks free ports\n(--role memory: the control service the metadata famd calls; required)")
	fs.StringVar(&c.dataListen, "data-listen", "", "data-plane TCP address `HOST:PORT` (default: the --listen host at its port + 1)")
	fs.StringVar(&c.socket, "socket", "", "serve gRPC on the Unix socket `PATH`; the data plane listens on PATH.data\n(--role memory: PATH is the data-plane socket for clients on this host)")
	fs.StringVar(&c.tokenFile, "token-file", os.Getenv("OPENFAM_TOKEN_FILE"), "cluster token `FILE` (mode 0600) TCP clients must present\n(default $OPENFAM_TOKEN_FILE)")
	fs.StringVar(&c.serverTokenFile, "server-token-file", "", "server token `FILE` (mode 0600) memory servers prove they hold when they join:\non the metadata famd (roles all and metadata) and on every --role memory famd;\nnever give it to clients. Without it a metadata famd accepts memory servers\nonly on its Unix socket from its own uid")
	fs.StringVar(&c.auth, "auth", "token", "`MODE` authenticating TCP clients: token (all act as --tcp-identity) or munge\n(each is who its MUNGE credential says)")
	fs.StringVar(&c.tcpIdentity, "tcp-identity", "", "`UID:GID` every TCP client acts as with --auth token (default: famd's own;\nrequired when famd runs as root)")
	fs.StringVar(&c.mungeSocket, "munge-socket", "", "munged's socket `PATH` with --auth munge (default: libmunge's,\n/run/munge/munge.socket.2)")
	fs.StringVar(&c.shmDir, "shm-dir", os.Getenv("OPENFAM_SHM_DIR"), "`DIR` for volatile region files, best on tmpfs\n(default $OPENFAM_SHM_DIR, else /dev/shm/openfam-UID)")
	fs.StringVar(&c.backupDir, "backup-dir", os.Getenv("OPENFAM_BACKUP_DIR"), "`DIR` for fam_backup archives, roles all and metadata\n(default $OPENFAM_BACKUP_DIR, else DATA_DIR/backups)")
	fs.StringVar(&c.join, "join", "", "metadata famd `ADDR` a memory server (--role memory) registers with:\ntcp://HOST:PORT (or HOST:PORT; needs --server-token-file) or unix:PATH (same host:\nfamd's own user, or --server-token-file when the metadata famd has one)")
	fs.StringVar(&c.role, "role", "all", "`ROLE`: all (metadata and memory in one daemon), metadata, or memory\n(see Roles above)")
	fs.StringVar(&c.advertise, "advertise", "", "`HOST` a memory server announces to the metadata famd and clients\n(default: the --listen host, which must then not be a wildcard such as 0.0.0.0)")
	fs.StringVar(&c.interleave, "interleave-size", "", "block `BYTES` of regions striped over memory servers (roles all and metadata):\na multiple of 4096, with an optional suffix K, KiB, M, MiB, G or GiB (default 1MiB)")
	fs.StringVar(&c.logLevel, "log-level", "info", "`LEVEL` of log detail on stderr: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "`FORMAT` of log lines on stderr: text (time=... level=INFO msg=\"...\") or json\n(one object per line with time, level and msg)")
	fs.IntVar(&c.maxConnsPerPeer, "max-conns-per-peer", 0, fmt.Sprintf("most data-plane connections `N` one uid (Unix socket) or source address (TCP)\nmay hold; more are refused with an error and a warning (each client process opens\n4 per server); 0: %d, or a quarter of famd's open-file limit if lower; <0: no cap", transport.DefaultMaxConnsPerPeer))
	fs.DurationVar(&c.spin, "spin", transport.DefaultServerSpin, "how long the data plane polls a connection for its next request after answering\none, as a Go `DURATION`, before sleeping until one comes: saves the wake-up of a\nsleeping server on every small request of a busy PE; adapts to the PE's pace,\nso an idle famd polls nothing; at most one connection per core but one polls at\nonce; 0 never polls. A memory famd also polls this long for a peer's reply to\nthe forward of a RAID atomic")
	fs.StringVar(&c.provider, "provider", "tcp", "data-plane `PROVIDER`: tcp (the project's own protocol) or a libfabric provider\nsuch as \"tcp;ofi_rxm\", sockets, shm, \"verbs;ofi_rxm\", cxi, efa (roles memory and all;\nsee Data plane above; fi_info -l lists those of this host)")
	fs.StringVar(&c.ifDevice, "if-device", os.Getenv("OPENFAM_IF_DEVICE"), "fabric domain `NAME` of the --provider endpoint, OpenFAM's if_device: an interface\nfor tcp;ofi_rxm and sockets (eth0), a NIC for verbs (mlx5_0), cxi (cxi0), efa;\n'fi_info -p PROVIDER' lists the domains (default $OPENFAM_IF_DEVICE, else the\nprovider's choice)")
	showVersion := fs.Bool("version", false, "print famd's version and exit")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful stop waits for running calls, as a Go `DURATION` (5s, 1m)")
	fs.DurationVar(&c.probeInterval, "probe-interval", time.Second, "how often a metadata famd probes each memory server, as a Go `DURATION`\n(roles all and metadata; issue 16)")
	fs.IntVar(&c.probeFailures, "probe-failures", 3, "failed probes in a row, `N`, after which a metadata famd declares a memory server\ndown and tells every client (one failed probe after a client's report suffices)")
	fs.StringVar(&c.metricsListen, "metrics-listen", "", "serve Prometheus metrics over HTTP at `HOST:PORT`/metrics (port 0 picks one;\nthe startup log names it): calls and requests by kind and result, bytes moved,\nerrors, open sessions, regions, memory per server. No authentication: bind\nit to a trusted address")
	// The flag package calls Usage on --help and after reporting a parse
	// error; both are handled below instead.
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprint(stdout, usageHead)
			printFlags(fs)
			fmt.Fprint(stdout, usageEnv)
			return exitOK
		}
		fmt.Fprintln(stderr, "famd: see famd --help")
		return exitUsage
	}
	if *showVersion {
		fmt.Fprintf(stdout, "famd %s\n", version.String())
		return exitOK
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "famd: unexpected arguments %q (see --help)\n", fs.Args())
		return exitUsage
	}
	lg, err := newLogger(stderr, c.logLevel, c.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "famd: %v\n", err)
		return exitUsage
	}
	if c.metricsListen != "" {
		if _, _, err := net.SplitHostPort(strings.TrimPrefix(c.metricsListen, "http://")); err != nil {
			return reportConfig(stderr, usagef("--metrics-listen %q: want HOST:PORT", c.metricsListen))
		}
	}
	if c.role == "memory" {
		mo, err := c.memoryOptions(lg)
		if err != nil {
			return reportConfig(stderr, err)
		}
		mx, status := startMetrics(c.metricsListen, lg)
		if status != exitOK {
			return status
		}
		if mx != nil {
			mo.DataObserver = mx.m
		}
		return serveMemory(mo, lg, mx)
	}
	opts, err := c.options(lg)
	if err != nil {
		return reportConfig(stderr, err)
	}
	mx, status := startMetrics(c.metricsListen, lg)
	if status != exitOK {
		return status
	}
	if mx != nil {
		opts.CallObserver, opts.DataObserver = mx.m, mx.m
	}
	return serve(opts, lg, mx)
}

// reportConfig prints a configuration error and returns its exit status.
func reportConfig(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "famd: %v\n", err)
	if isUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// printFlags lists the flags GNU style (--name ARG), as famd's users
// type them; the flag package accepts both one and two dashes.
func printFlags(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintf(fs.Output(), "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		// A boolean flag is off unless given: "(default false)" says nothing.
		if f.DefValue != "" && f.DefValue != "false" && !strings.Contains(usage, "(default") {
			fmt.Fprintf(fs.Output(), "    \t(default %q)\n", f.DefValue)
		}
	})
}

// usageError marks an invalid flag value.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// options validates the flags of roles all and metadata and turns them
// into embed options.
func (c *config) options(lg *logger) (embed.Options, error) {
	var o embed.Options
	switch c.role {
	case "all", "metadata":
	default:
		return o, usagef("--role must be all, metadata or memory, not %q", c.role)
	}
	if c.join != "" {
		return o, usagef("--join is for memory servers (--role memory); a --role %s famd is what they join", c.role)
	}
	if c.advertise != "" {
		return o, usagef("--advertise is for memory servers (--role memory)")
	}
	block, err := parseInterleave(c.interleave)
	if err != nil {
		return o, err
	}
	if c.socket == "" && c.listen == "" {
		return o, usagef("nothing to serve: give --socket PATH and/or --listen tcp://HOST:PORT")
	}
	if c.dataDir == "" {
		return o, usagef("--data-dir is empty")
	}
	if c.shutdownTimeout <= 0 {
		return o, usagef("--shutdown-timeout must be positive")
	}
	if c.probeInterval <= 0 || c.probeFailures <= 0 {
		return o, usagef("--probe-interval and --probe-failures must be positive")
	}
	if err := c.checkSpin(); err != nil {
		return o, err
	}
	o = embed.Options{DataDir: c.dataDir, ShmDir: c.shmDir, BackupDir: c.backupDir, SocketPath: c.socket,
		NoSocket: c.socket == "", ShutdownTimeout: c.shutdownTimeout, Logf: lg.debugf, ClusterLogf: lg.infof,
		WarnLogf: lg.warnf, Role: c.role, InterleaveSize: block, Auth: c.auth, MungeSocket: c.mungeSocket,
		MaxConnsPerPeer: c.maxConnsPerPeer, DataSpin: c.spin,
		Health: rpc.HealthOptions{Interval: c.probeInterval, ProbeTimeout: min(c.probeInterval, time.Second), FailedProbes: c.probeFailures}}
	if o.Provider, err = c.checkProvider(); err != nil {
		return o, err
	}
	o.Device = strings.TrimSpace(c.ifDevice)
	if o.TCPAddr, o.DataTCPAddr, err = c.tcpAddrs(); err != nil {
		return o, err
	}
	if o.Persist, o.PersistInterval, err = persistFromEnv(); err != nil {
		return o, err
	}
	if err := c.checkAuth(o.TCPAddr != ""); err != nil {
		return o, err
	}
	if o.TCPAddr != "" {
		if o.Token, err = c.token(); err != nil {
			return o, err
		}
		if c.auth == "token" {
			if o.TCPIdentity, err = c.identity(); err != nil {
				return o, err
			}
		}
	}
	if c.serverTokenFile != "" {
		if o.ServerToken, err = rpc.ReadToken(c.serverTokenFile); err != nil {
			return o, fmt.Errorf("--server-token-file: %v", err)
		}
		if o.ServerToken == o.Token {
			return o, usagef("--server-token-file holds the cluster token: memory servers need a credential clients do not have; make a second token")
		}
	} else if c.role == "metadata" && c.socket == "" {
		return o, usagef("--role metadata without --socket needs --server-token-file: otherwise no memory server could ever join")
	}
	return o, nil
}

// checkAuth validates --auth, --tcp-identity and --munge-socket of roles
// all and metadata; tcp says whether famd serves TCP.
func (c *config) checkAuth(tcp bool) error {
	switch c.auth {
	case "token", "munge":
	default:
		return usagef("--auth must be token or munge, not %q", c.auth)
	}
	if !tcp && (c.auth != "token" || c.tcpIdentity != "" || c.mungeSocket != "") {
		return usagef("--auth, --tcp-identity and --munge-socket are about TCP clients: they need --listen")
	}
	if c.auth == "munge" && c.tcpIdentity != "" {
		return usagef("--tcp-identity is for --auth token; with --auth munge each client is who its MUNGE credential says")
	}
	if c.auth == "token" && c.mungeSocket != "" {
		return usagef("--munge-socket is for --auth munge")
	}
	return nil
}

// identity is the identity of every TCP client with --auth token: the
// --tcp-identity flag, else famd's own (nil). Root must choose: mapping
// every holder of the cluster token to root is never a safe default.
func (c *config) identity() (*rpc.Identity, error) {
	if c.tcpIdentity == "" {
		if os.Getuid() == 0 {
			return nil, usagef("famd runs as root and serves TCP with --auth token, where every TCP client acts as one identity: give --tcp-identity UID:GID (not 0:0 unless every token holder may act as root), or use --auth munge")
		}
		return nil, nil
	}
	id, err := rpc.ParseIdentity(c.tcpIdentity)
	if err != nil {
		return nil, usagef("--tcp-identity: %v", err)
	}
	return &id, nil
}

// tcpAddrs checks --listen and --data-listen and returns them as
// HOST:PORT ("" when not given).
func (c *config) tcpAddrs() (ctl, data string, err error) {
	if c.dataListen != "" && c.listen == "" {
		return "", "", usagef("--data-listen needs --listen")
	}
	if c.listen == "" {
		return "", "", nil
	}
	hp, ok := strings.CutPrefix(c.listen, "tcp://")
	if !ok {
		return "", "", usagef("--listen %q: want tcp://HOST:PORT", c.listen)
	}
	if _, _, err := net.SplitHostPort(hp); err != nil {
		return "", "", usagef("--listen %q: want tcp://HOST:PORT", c.listen)
	}
	if c.dataListen != "" {
		data = strings.TrimPrefix(c.dataListen, "tcp://")
		if _, _, err := net.SplitHostPort(data); err != nil {
			return "", "", usagef("--data-listen %q: want HOST:PORT", c.dataListen)
		}
	}
	return hp, data, nil
}

// token reads the cluster token --token-file (or $OPENFAM_TOKEN_FILE)
// names. A missing name is a usage error; a bad file is not.
func (c *config) token() (string, error) {
	if c.tokenFile == "" {
		return "", usagef("--listen needs a cluster token: give --token-file FILE (mode 0600) or set OPENFAM_TOKEN_FILE")
	}
	return rpc.ReadToken(c.tokenFile)
}

// memoryOptions validates the flags of --role memory and turns them into
// embed options.
func (c *config) memoryOptions(lg *logger) (embed.MemoryOptions, error) {
	var o embed.MemoryOptions
	if c.interleave != "" {
		return o, usagef("--interleave-size is set on the metadata famd (--role metadata or all), not on a memory server")
	}
	if c.auth != "token" || c.tcpIdentity != "" || c.mungeSocket != "" {
		return o, usagef("--auth, --tcp-identity and --munge-socket are set on the metadata famd, which clients call; a memory server serves keys only")
	}
	if c.join == "" {
		return o, usagef("--role memory needs --join ADDR: the metadata famd (tcp://HOST:PORT or unix:PATH)")
	}
	join, err := parseJoin(c.join)
	if err != nil {
		return o, err
	}
	if c.listen == "" {
		return o, usagef("--role memory needs --listen tcp://HOST:PORT: the metadata famd calls it there")
	}
	ctl, data, err := c.tcpAddrs()
	if err != nil {
		return o, err
	}
	if c.dataDir == "" {
		return o, usagef("--data-dir is empty")
	}
	if c.shutdownTimeout <= 0 {
		return o, usagef("--shutdown-timeout must be positive")
	}
	if err := c.checkSpin(); err != nil {
		return o, err
	}
	if c.advertise == "" {
		// Caught here rather than by StartMemory so that it is a usage
		// error: the fix is a flag.
		h, _, _ := net.SplitHostPort(ctl)
		if ip := net.ParseIP(h); h == "" || ip != nil && ip.IsUnspecified() {
			return o, usagef("--listen %s is every interface: give --advertise HOST, the address clients and the metadata famd reach this server at", c.listen)
		}
	} else if strings.ContainsAny(c.advertise, ":/ ") && net.ParseIP(c.advertise) == nil {
		return o, usagef("--advertise %q: want a host name or an IP address, without a port", c.advertise)
	}
	tok, err := c.token()
	if err != nil {
		return o, err
	}
	var stok string
	if c.serverTokenFile != "" {
		if stok, err = rpc.ReadToken(c.serverTokenFile); err != nil {
			return o, fmt.Errorf("--server-token-file: %v", err)
		}
		if stok == tok {
			return o, usagef("--server-token-file holds the cluster token: memory servers need a credential clients do not have; make a second token")
		}
	} else if !strings.HasPrefix(join, "unix:") {
		return o, usagef("--join over TCP needs --server-token-file: the metadata famd's server token, which proves this is a memory server")
	}
	prov, err := c.checkProvider()
	if err != nil {
		return o, err
	}
	return embed.MemoryOptions{Provider: prov, Device: strings.TrimSpace(c.ifDevice), DataDir: c.dataDir, ShmDir: c.shmDir, TCPAddr: ctl, DataTCPAddr: data,
		DataSocketPath: c.socket, Advertise: c.advertise, Join: join, Token: tok, ServerToken: stok,
		ShutdownTimeout: c.shutdownTimeout, Logf: lg.debugf, WarnLogf: lg.warnf, MaxConnsPerPeer: c.maxConnsPerPeer,
		DataSpin: c.spin}, nil
}

// maxSpin bounds --spin: polling longer than this between requests buys
// nothing a wake-up does not, and costs a core per polling connection.
const maxSpin = time.Millisecond

// checkSpin refuses a --spin outside 0..maxSpin.
func (c *config) checkSpin() error {
	if c.spin < 0 || c.spin > maxSpin {
		return usagef("--spin %v: give a duration from 0 (never poll) to %v", c.spin, maxSpin)
	}
	return nil
}

// parseJoin turns --join into the form embed.MemoryOptions.Join takes.
func parseJoin(s string) (string, error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if path == "" {
			return "", usagef("--join %q: empty socket path", s)
		}
		return s, nil
	}
	hp := strings.TrimPrefix(s, "tcp://")
	if _, port, err := net.SplitHostPort(hp); err != nil || port == "" {
		return "", usagef("--join %q: want tcp://HOST:PORT, HOST:PORT or unix:PATH", s)
	}
	return hp, nil
}

// parseInterleave reads --interleave-size: bytes with an optional binary
// suffix, a positive multiple of 4096; "" is 0 (the default).
func parseInterleave(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := bytesize.Parse(s)
	if err != nil {
		return 0, usagef("--interleave-size %q: want a positive multiple of 4096 bytes, optionally with K, KiB, M, MiB, G or GiB", s)
	}
	if v%4096 != 0 {
		return 0, usagef("--interleave-size %s is %d bytes, not a multiple of 4096", s, v)
	}
	if v > 1<<30 {
		return 0, usagef("--interleave-size %s is more than 1GiB: a block that large leaves most items on one server", s)
	}
	return v, nil
}

// serve runs famd until a signal or a listener failure.
func serve(opts embed.Options, lg *logger, mx *metricsEndpoint) int {
	sigs := notifySignals()
	defer signal.Stop(sigs)
	defer mx.close(lg)
	d, err := embed.Start(opts)
	if err != nil {
		lg.errorf("cannot start: %v", err)
		return exitFailure
	}
	if mx != nil {
		mx.m.Watch(metrics.Source{Sessions: d.Server().Sessions, Regions: d.Regions, Usage: d.Server().Usage})
	}
	var where []string
	if p := d.SocketPath(); p != "" {
		where = append(where, fmt.Sprintf("gRPC on unix:%s (data plane unix:%s)", p, d.DataSocketPath()))
	}
	if a := d.Addr(); a != "" {
		who := "clients authenticated with MUNGE"
		if opts.Auth != "munge" {
			id := rpc.Identity{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
			if opts.TCPIdentity != nil {
				id = *opts.TCPIdentity
			}
			who = fmt.Sprintf("every client acts as uid %d gid %d", id.UID, id.GID)
		}
		where = append(where, fmt.Sprintf("gRPC on tcp://%s (data plane tcp://%s, token required; %s)", a, d.DataAddr(), who))
	}
	if opts.ServerToken != "" {
		where = append(where, "memory servers join with the server token")
	} else {
		where = append(where, fmt.Sprintf("memory servers join only on the Unix socket as uid %d", os.Getuid()))
	}
	warnForeignDataDir(d.DataDir(), lg)
	regions := "unknown number of"
	if n, err := d.Regions(); err == nil {
		regions = fmt.Sprint(n)
	}
	role := "role all: metadata, and memory for regions no memory server holds"
	if opts.Role == "metadata" {
		role = "role metadata: names, permissions and placement; region bytes on memory servers"
	}
	block := opts.InterleaveSize
	if block == 0 {
		block = rpc.DefaultInterleaveSize
	}
	if mx != nil {
		where = append(where, "metrics on http://"+mx.srv.Addr()+"/metrics")
	}
	if !embed.IsTCP(opts.Provider) {
		where = append(where, "data-plane provider "+opts.Provider)
	}
	lg.infof("famd %s (%s; interleave size %d bytes) serving %s; data dir %s; %s regions; pid %d",
		rpc.APIVersion, role, block, strings.Join(where, ", "), d.DataDir(), regions, os.Getpid())
	notifyReady(lg, fmt.Sprintf("serving %s regions", regions))
	status := exitOK
loop:
	for {
		select {
		case s := <-sigs:
			if !stopping(s, lg) {
				continue
			}
		case err := <-d.Failed():
			lg.errorf("stopping: %v", err)
			status = exitFailure
		case err := <-mx.failed():
			lg.errorf("stopping: metrics endpoint: %v", err)
			status = exitFailure
		}
		break loop
	}
	notifyStopping(lg)
	// Scrapes read the instance: stop them before it is finalized.
	mx.close(lg)
	if err := d.Close(); err != nil {
		lg.errorf("stop: %v", err)
		return exitFailure
	}
	lg.infof("stopped")
	return status
}

// warnForeignDataDir warns when the data directory belongs to a user
// other than the one famd runs as: typically root started famd on a
// user's directory, or the service user changed. It still works (famd
// could open it), but the files famd creates there have another owner
// than the rest, and a later famd run as that owner may be unable to use
// them.
func warnForeignDataDir(dir string, lg *logger) {
	st, err := os.Stat(dir)
	if err != nil {
		return
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) == os.Geteuid() {
		return
	}
	lg.warnf("data directory %s is owned by uid %d, not by uid %d that famd runs as: files famd creates there will be owned by uid %d; run famd as the directory's owner, or chown the directory",
		dir, sys.Uid, os.Geteuid(), os.Geteuid())
}

// notifySignals returns the channel famd's signals arrive on: SIGTERM,
// SIGINT and SIGQUIT stop it gracefully; SIGHUP, whose default action
// would kill famd without a word and leave its socket files behind, is
// logged and otherwise ignored (see stopping).
func notifySignals() chan os.Signal {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP)
	return sigs
}

// stopping logs signal s and says whether famd stops for it. famd has no
// configuration file to reload and logs to stderr (which the service
// manager rotates), so SIGHUP, the conventional "reload" signal, changes
// nothing: famd says so and keeps serving.
func stopping(s os.Signal, lg *logger) bool {
	if s == syscall.SIGHUP {
		lg.infof("%s: ignored: famd has no configuration to reload and logs to stderr; SIGTERM stops it", signalName(s))
		return false
	}
	lg.infof("%s: stopping", signalName(s))
	return true
}

// signalName is the conventional name of s ("SIGTERM"); Go's String gives
// the description ("terminated").
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// joinNagEvery is how often a memory server that has not joined yet says
// so at level warn (the reasons are logged at level debug).
const joinNagEvery = 10 * time.Second

// serveMemory runs a memory server until a signal or a listener failure.
func serveMemory(opts embed.MemoryOptions, lg *logger, mx *metricsEndpoint) int {
	sigs := notifySignals()
	defer signal.Stop(sigs)
	defer mx.close(lg)
	m, err := embed.StartMemory(opts)
	if err != nil {
		lg.errorf("cannot start: %v", err)
		return exitFailure
	}
	where := fmt.Sprintf("control gRPC on tcp://%s, data plane tcp://%s (token required)", m.Addr(), m.DataAddr())
	if p := m.DataSocketPath(); p != "" {
		where += fmt.Sprintf(" and unix:%s", p)
	}
	if !embed.IsTCP(opts.Provider) {
		where += ", data-plane provider " + opts.Provider
	}
	if mx != nil {
		where += ", metrics on http://" + mx.srv.Addr() + "/metrics"
		host, _ := os.Hostname()
		mx.m.Watch(metrics.Source{Usage: func() ([]rpc.ServerUsage, error) {
			n, b := m.Server().Segments()
			return []rpc.ServerUsage{{ID: m.ID(), Hostname: host, Reachable: true, Regions: uint64(n), Bytes: b}}, nil
		}})
	}
	lg.infof("famd %s (role memory: region segments for the metadata famd at %s) serving %s; data dir %s; pid %d; joining",
		rpc.APIVersion, opts.Join, where, m.DataDir(), os.Getpid())
	notifyReady(lg, "serving; joining "+opts.Join)
	warnForeignDataDir(m.DataDir(), lg)
	joined := m.Joined()
	nag := time.NewTicker(joinNagEvery)
	defer nag.Stop()
	started := time.Now()
	status := exitOK
loop:
	for {
		select {
		case <-joined:
			joined = nil
			nag.Stop()
			lg.infof("joined the metadata famd at %s as memory server %d", opts.Join, m.ID())
		case <-nag.C:
			lg.warnf("not joined to the metadata famd at %s after %v; still trying (--log-level debug says why)",
				opts.Join, time.Since(started).Round(time.Second))
		case s := <-sigs:
			if stopping(s, lg) {
				break loop
			}
		case err := <-m.Failed():
			lg.errorf("stopping: %v", err)
			status = exitFailure
			break loop
		case err := <-mx.failed():
			lg.errorf("stopping: metrics endpoint: %v", err)
			status = exitFailure
			break loop
		}
	}
	notifyStopping(lg)
	mx.close(lg)
	if err := m.Close(); err != nil {
		lg.errorf("stop: %v", err)
		return exitFailure
	}
	lg.infof("stopped")
	return status
}

// logger writes famd's log to stderr through log/slog: one record per
// line, each with its time and level, as text (key=value) or JSON
// (--log-format). The embedded servers log through the *f methods, with
// printf-style messages.
type logger struct {
	l *slog.Logger
}

var levels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// newLogger makes the logger of --log-level level and --log-format format.
func newLogger(w io.Writer, level, format string) (*logger, error) {
	n, ok := levels[strings.ToLower(level)]
	if !ok {
		return nil, usagef("--log-level must be debug, info, warn or error, not %q", level)
	}
	ho := &slog.HandlerOptions{Level: n}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, ho)
	case "json":
		h = slog.NewJSONHandler(w, ho)
	default:
		return nil, usagef("--log-format must be text or json, not %q", format)
	}
	return &logger{l: slog.New(h)}, nil
}

func (g *logger) at(level slog.Level, format string, args ...any) {
	ctx := context.Background()
	if g.l.Enabled(ctx, level) {
		// The embedded servers' lines start with "famd: ", from when the
		// log had no other mark of where a line came from.
		g.l.Log(ctx, level, fmt.Sprintf(strings.TrimPrefix(format, "famd: "), args...))
	}
}

// debugf is also the Logf of the embedded servers.
func (g *logger) debugf(format string, args ...any) { g.at(slog.LevelDebug, format, args...) }

// infof also logs the cluster's and the server's events (regions created
// and destroyed, client sessions, memory servers joining).
func (g *logger) infof(format string, args ...any) { g.at(slog.LevelInfo, format, args...) }

// warnf also logs the server's refusals.
func (g *logger) warnf(format string, args ...any) { g.at(slog.LevelWarn, format, args...) }

func (g *logger) errorf(format string, args ...any) { g.at(slog.LevelError, format, args...) }

// persistFromEnv reads famd's persistence policy ($OPENFAM_PERSIST,
// $OPENFAM_PERSIST_INTERVAL; see core.PersistPolicy), refusing bad values.
func persistFromEnv() (core.PersistPolicy, time.Duration, error) {
	p, err := core.ParsePersistPolicy(os.Getenv("OPENFAM_PERSIST"))
	if err != nil {
		return 0, 0, err
	}
	var d time.Duration
	if v := os.Getenv("OPENFAM_PERSIST_INTERVAL"); v != "" {
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("OPENFAM_PERSIST_INTERVAL=%q: want a positive Go duration such as 5s", v)
		}
	}
	return p, d, nil
}
