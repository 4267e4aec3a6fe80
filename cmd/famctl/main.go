// Command famctl inspects and administers the regions and items of a famd:
// list, stat, create, destroy, change permissions, show servers and usage,
// as tables or as JSON. See usageText (famctl --help).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/internal/famauth"
	"github.com/gofam/openfam/internal/version"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the server refused (FAM error) or could not be reached
	exitUsage = 2
)

const usageText = `Usage: famctl [global options] COMMAND [ARGS...] [options]

famctl talks to a famd over its control plane (gRPC).

Commands:
%s
Global options (also accepted after COMMAND):
  --server ADDR      the famd: unix:/path/to/famd.sock, host:port or
                     tcp://host:port (default: $OPENFAM_SERVER)
  --token-file F     cluster token for a TCP server (default:
                     $OPENFAM_TOKEN_FILE); must be readable by its owner only
  --timeout DUR      limit for connecting and for each call (default 10s)
  --json             print machine-readable JSON on stdout
  --data-dir DIR     inspect the store in DIR without a famd (see below)
  --shm-dir DIR      with --data-dir: its volatile regions' directory
  --version          print famctl's version and exit (before COMMAND only)
  -h, --help         this help; 'famctl help COMMAND' or
                     'famctl COMMAND --help' describe one command

REGION is a region name; a number that names no region is taken as a region
id. MODE is octal (0600, 644). SIZE is bytes with an optional K, M, G or T
suffix (powers of 1024).

Exit status: 0 success, 1 the server reported an error (printed as its FAM
code name and message; with --json also as {"error": {...}} on stdout) or
could not be reached, 2 usage error.

%s
Environment: OPENFAM_SERVER, OPENFAM_TOKEN_FILE (see above);
OPENFAM_AUTH=munge to insist on acting as yourself over TCP (MUNGE; a famd
with --auth munge asks for it anyway), =token to never use MUNGE;
OPENFAM_MUNGE_SOCKET for munged's socket. Over TCP without MUNGE famctl acts
as the famd's one TCP identity (famd --tcp-identity), whoever runs it.
`

// globals are the options every command accepts.
type globals struct {
	server    string
	tokenFile string
	timeout   time.Duration
	json      bool
	dataDir   string // inspect this store offline (offline.go)
	shmDir    string // its volatile regions' directory
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.server, "server", g.server, "")
	fs.StringVar(&g.tokenFile, "token-file", g.tokenFile, "")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "")
	fs.BoolVar(&g.json, "json", g.json, "")
	fs.StringVar(&g.dataDir, "data-dir", g.dataDir, "")
	fs.StringVar(&g.shmDir, "shm-dir", g.shmDir, "")
}

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// famError is a domain error a famd reported in a reply's err field.
type famError struct {
	code    int32
	op, msg string
}

func (e *famError) Error() string {
	s := codeName(e.code)
	if e.op != "" {
		s += ": " + e.op
	}
	return s + ": " + e.msg
}

// codeName is the FAM_E* name of code (core.Code.Macro).
func codeName(code int32) string { return core.Code(code).Macro() }

// check turns a reply's err field into a Go error (nil when unset).
func check(e *pb.FamError) error {
	if e == nil || e.GetCode() == 0 {
		return nil
	}
	return &famError{code: e.GetCode(), op: e.GetOp(), msg: e.GetMsg()}
}

// session is one command's connection and output.
type session struct {
	g      *globals
	addr   string
	conn   *grpc.ClientConn
	fam    pb.FamClient
	stdout io.Writer
	done   func() // closes what the session opened; nil: just conn
}

// close ends the session.
func (s *session) close() {
	if s.done != nil {
		s.done()
		return
	}
	s.conn.Close()
}

// ctx returns a context bounded by --timeout for one call.
func (s *session) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.g.timeout)
}

// emit prints v as indented JSON.
func (s *session) emit(v any) error {
	enc := json.NewEncoder(s.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is famctl with its arguments and output streams; it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	g := &globals{timeout: 10 * time.Second}
	fs := flag.NewFlagSet("famctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	showVersion := fs.Bool("version", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, usageText, commandList(), offlineHelp)
			return exitOK
		}
		return report(g, stdout, stderr, usagef("%v", err))
	}
	if *showVersion {
		fmt.Fprintf(stdout, "famctl %s\n", version.String())
		return exitOK
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return report(g, stdout, stderr, usagef("no COMMAND given"))
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		if len(rest) == 0 {
			fmt.Fprintf(stdout, usageText, commandList(), offlineHelp)
			return exitOK
		}
		c := findCommand(rest[0])
		if c == nil {
			return report(g, stdout, stderr, usagef("unknown command %q", rest[0]))
		}
		fmt.Fprint(stdout, c.usage())
		return exitOK
	}
	c := findCommand(name)
	if c == nil {
		return report(g, stdout, stderr, usagef("unknown command %q", name))
	}
	pos, o, help, err := c.parse(g, rest)
	if help {
		fmt.Fprint(stdout, c.usage())
		return exitOK
	}
	if err == nil {
		err = c.execute(g, o, pos, stdout)
	}
	return report(g, stdout, stderr, err)
}

// report prints err (if any) and returns the exit status that goes with it.
func report(g *globals, stdout, stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "famctl: %v\nRun 'famctl --help' for usage.\n", err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "famctl: %v\n", err)
	if g.json {
		var fe *famError
		e := map[string]any{"msg": err.Error()}
		if errors.As(err, &fe) {
			e = map[string]any{"code": fe.code, "name": codeName(fe.code), "op": fe.op, "msg": fe.msg}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"error": e})
	}
	return exitError
}

// dial connects to the famd named by --server or $OPENFAM_SERVER.
func dial(g *globals) (*session, error) {
	if g.dataDir != "" {
		if g.server != "" {
			return nil, usagef("give --server or --data-dir, not both")
		}
		// --data-dir, given on the command line, wins over
		// $OPENFAM_SERVER from the environment.
		return openOffline(g)
	}
	addr := g.server
	if addr == "" {
		addr = os.Getenv("OPENFAM_SERVER")
	}
	if addr == "" {
		return nil, usagef("no server: give --server ADDR or set OPENFAM_SERVER (or --data-dir DIR to inspect a store without a famd)")
	}
	var conn *grpc.ClientConn
	var err error
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return nil, usagef("server %q: empty socket path", addr)
		}
		conn, err = rpc.DialUnix(path, g.timeout)
	} else {
		hostport := strings.TrimPrefix(addr, "tcp://")
		tf := g.tokenFile
		if tf == "" {
			tf = os.Getenv("OPENFAM_TOKEN_FILE")
		}
		if tf == "" {
			return nil, usagef("server %s is a TCP address: give --token-file or set OPENFAM_TOKEN_FILE", addr)
		}
		token, terr := rpc.ReadToken(tf)
		if terr != nil {
			return nil, fmt.Errorf("token file: %w", terr)
		}
		auth, aerr := famauth.ClientFromEnv(token)
		if aerr != nil {
			return nil, aerr
		}
		conn, err = rpc.DialTCP(hostport, auth, g.timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot reach famd at %s: %w", addr, err)
	}
	return &session{g: g, addr: addr, conn: conn, fam: pb.NewFamClient(conn)}, nil
}
