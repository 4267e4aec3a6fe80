// Command famd serves OpenFAM regions and data items to processes on this
// host (a Unix socket) and across the network (TCP): the control plane on
// gRPC (spec/proto/openfam/v1/fam.proto), the data plane on the binary
// protocol of spec/wire.md. See --help.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // could not start, or a listener failed
	exitUsage   = 2 // bad flags, or a role that is not implemented
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
with a token file its group or others can read.

At least one of --socket and --listen is required. SIGTERM or SIGINT stops
famd gracefully (exit status 0); persistent regions stay in the data
directory for the next start. A second famd on the same data directory
fails at once.

Flags:
`

const usageEnv = `
Environment:
  OPENFAM_DATA_DIR     default of --data-dir
  OPENFAM_SHM_DIR      default of --shm-dir
  OPENFAM_BACKUP_DIR   default of --backup-dir
  OPENFAM_TOKEN_FILE   default of --token-file

Exit status: 0 after a graceful stop, 1 if famd could not start or a
listener failed, 2 for invalid flags or a role that is not implemented.
`

type config struct {
	dataDir, shmDir, backupDir string
	listen, dataListen         string
	socket                     string
	tokenFile                  string
	join, role, logLevel       string
	shutdownTimeout            time.Duration
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
	fs.StringVar(&c.dataDir, "data-dir", defaultDataDir(), "`DIR` holding the metadata store, persistent regions and backups\n(default $OPENFAM_DATA_DIR, else ~/.local/share/openfam-famd)")
	fs.StringVar(&c.listen, "listen", "", "serve gRPC on TCP at `tcp://HOST:PORT`; the data plane listens on HOST at PORT+1\nunless --data-listen says otherwise (needs --token-file)")
	fs.StringVar(&c.dataListen, "data-listen", "", "data-plane TCP address `HOST:PORT` (default: the --listen host at its port + 1)")
	fs.StringVar(&c.socket, "socket", "", "serve gRPC on the Unix socket `PATH`; the data plane listens on PATH.data")
	fs.StringVar(&c.tokenFile, "token-file", os.Getenv("OPENFAM_TOKEN_FILE"), "cluster token `FILE` (mode 0600) TCP clients must present\n(default $OPENFAM_TOKEN_FILE)")
	fs.StringVar(&c.shmDir, "shm-dir", os.Getenv("OPENFAM_SHM_DIR"), "`DIR` for volatile region files, best on tmpfs\n(default $OPENFAM_SHM_DIR, else /dev/shm/openfam-UID)")
	fs.StringVar(&c.backupDir, "backup-dir", os.Getenv("OPENFAM_BACKUP_DIR"), "`DIR` for fam_backup archives (default $OPENFAM_BACKUP_DIR, else DATA_DIR/backups)")
	fs.StringVar(&c.join, "join", "", "metadata service `ADDR` (HOST:PORT) a memory server registers with (--role memory;\nnot implemented yet)")
	fs.StringVar(&c.role, "role", "all", "`ROLE`: all (metadata and memory in one daemon), metadata, or memory;\nonly all is implemented yet")
	fs.StringVar(&c.logLevel, "log-level", "info", "`LEVEL` of log detail on stderr: debug, info, warn or error")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful stop waits for running calls, as a Go `DURATION` (5s, 1m)")
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
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "famd: unexpected arguments %q (see --help)\n", fs.Args())
		return exitUsage
	}
	lg, err := newLogger(stderr, c.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "famd: %v\n", err)
		return exitUsage
	}
	opts, err := c.options(lg)
	if err != nil {
		fmt.Fprintf(stderr, "famd: %v\n", err)
		var nf notImplemented
		if errors.As(err, &nf) || isUsage(err) {
			return exitUsage
		}
		return exitFailure
	}
	return serve(opts, lg)
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
		if f.DefValue != "" && !strings.Contains(usage, "(default") {
			fmt.Fprintf(fs.Output(), "    \t(default %q)\n", f.DefValue)
		}
	})
}

// notImplemented marks a configuration this famd cannot serve yet.
type notImplemented struct{ msg string }

func (e notImplemented) Error() string { return e.msg }

// usageError marks an invalid flag value.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// options validates the flags and turns them into embed options.
func (c *config) options(lg *logger) (embed.Options, error) {
	var o embed.Options
	switch c.role {
	case "all":
	case "metadata", "memory":
		return o, notImplemented{fmt.Sprintf("--role %s is not implemented yet: this famd only runs as --role all (metadata and memory in one daemon)", c.role)}
	default:
		return o, usagef("--role must be all, metadata or memory, not %q", c.role)
	}
	if c.join != "" {
		if _, _, err := net.SplitHostPort(strings.TrimPrefix(c.join, "tcp://")); err != nil {
			return o, usagef("--join %q: want HOST:PORT", c.join)
		}
		return o, notImplemented{"--join registers a memory server (--role memory), which is not implemented yet"}
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
	o = embed.Options{DataDir: c.dataDir, ShmDir: c.shmDir, BackupDir: c.backupDir, SocketPath: c.socket,
		NoSocket: c.socket == "", ShutdownTimeout: c.shutdownTimeout, Logf: lg.debugf}
	if c.dataListen != "" && c.listen == "" {
		return o, usagef("--data-listen needs --listen")
	}
	if c.listen != "" {
		hp, ok := strings.CutPrefix(c.listen, "tcp://")
		if !ok {
			return o, usagef("--listen %q: want tcp://HOST:PORT", c.listen)
		}
		if _, _, err := net.SplitHostPort(hp); err != nil {
			return o, usagef("--listen %q: want tcp://HOST:PORT", c.listen)
		}
		o.TCPAddr = hp
		if c.dataListen != "" {
			d := strings.TrimPrefix(c.dataListen, "tcp://")
			if _, _, err := net.SplitHostPort(d); err != nil {
				return o, usagef("--data-listen %q: want HOST:PORT", c.dataListen)
			}
			o.DataTCPAddr = d
		}
		if c.tokenFile == "" {
			return o, usagef("--listen needs a cluster token: give --token-file FILE (mode 0600) or set OPENFAM_TOKEN_FILE")
		}
		tok, err := rpc.ReadToken(c.tokenFile)
		if err != nil {
			return o, err
		}
		o.Token = tok
	}
	return o, nil
}

// serve runs famd until a signal or a listener failure.
func serve(opts embed.Options, lg *logger) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	d, err := embed.Start(opts)
	if err != nil {
		lg.errorf("cannot start: %v", err)
		return exitFailure
	}
	var where []string
	if p := d.SocketPath(); p != "" {
		where = append(where, fmt.Sprintf("gRPC on unix:%s (data plane unix:%s)", p, d.DataSocketPath()))
	}
	if a := d.Addr(); a != "" {
		where = append(where, fmt.Sprintf("gRPC on tcp://%s (data plane tcp://%s, token required)", a, d.DataAddr()))
	}
	regions := "unknown number of"
	if n, err := d.Regions(); err == nil {
		regions = fmt.Sprint(n)
	}
	lg.infof("famd %s (role all) serving %s; data dir %s; %s regions; pid %d",
		rpc.APIVersion, strings.Join(where, ", "), d.DataDir(), regions, os.Getpid())
	status := exitOK
	select {
	case s := <-sigs:
		lg.infof("%v: stopping", s)
	case err := <-d.Failed():
		lg.errorf("stopping: %v", err)
		status = exitFailure
	}
	if err := d.Close(); err != nil {
		lg.errorf("stop: %v", err)
		return exitFailure
	}
	lg.infof("stopped")
	return status
}

// logger writes leveled lines to stderr.
type logger struct {
	l     *log.Logger
	level int
}

var levels = map[string]int{"debug": 0, "info": 1, "warn": 2, "error": 3}

func newLogger(w io.Writer, level string) (*logger, error) {
	n, ok := levels[strings.ToLower(level)]
	if !ok {
		return nil, usagef("--log-level must be debug, info, warn or error, not %q", level)
	}
	return &logger{l: log.New(w, "famd: ", log.LstdFlags|log.Lmicroseconds), level: n}, nil
}

func (g *logger) at(level int, tag, format string, args ...any) {
	if level >= g.level {
		g.l.Printf(tag+format, args...)
	}
}

func (g *logger) debugf(format string, args ...any) { g.at(0, "debug: ", format, args...) }
func (g *logger) infof(format string, args ...any)  { g.at(1, "", format, args...) }
func (g *logger) errorf(format string, args ...any) { g.at(3, "error: ", format, args...) }
