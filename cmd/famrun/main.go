// Command famrun launches an OpenFAM job: N processing elements (PEs) that
// share one famd, each told its rank and the job size through the
// environment. See usageText (famrun --help) for the whole interface.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gofam/openfam/internal/version"
)

// Exit statuses of famrun itself; a PE's own status is passed on as is.
const (
	exitUsage      = 2
	exitFailure    = 1
	exitTimeout    = 124
	exitCannotExec = 126
	exitNotFound   = 127
)

const usageText = `Usage: famrun -n N [options] [--] PROGRAM [ARGS...]

famrun starts N copies of PROGRAM (the processing elements, PEs, of one
OpenFAM job), gives each its rank and the job size, and waits for them.

Unless OPENFAM_SERVER is already set, famrun first starts a private famd for
the job in a temporary directory and points every PE at it; the famd is
stopped and the directory removed when the job ends. With OPENFAM_SERVER set,
the PEs use that server and no famd is started.

With --servers K (K > 1) the private famd is a set of K + 1 processes: a
metadata famd (--role metadata) on a Unix socket, which the PEs talk to, and
K memory famds (--role memory), each with a data and a shm directory of its
own under the job's directory, serving on TCP at 127.0.0.1 (free ports) with
a cluster token made for the job (a file of mode 0600) and on a data-plane
Unix socket for the PEs. The memory famds join with a second secret made for
the job, the server token (<tmpdir>/server-token, mode 0600): only the famds
are given it, and famrun deletes the file once they all joined, before any PE
starts, so a PE does not join as a memory server. (PEs run as the same user
as the famds, which Unix does not separate: this guards against mistakes, not
against a hostile program of that user.) famrun starts the PEs only once every memory famd
has joined the metadata famd and answers it; interleaved regions (the
default) are then striped over all K. If the metadata famd (or the only
famd) dies, the job is stopped; if a memory famd dies, famrun says so and the
job goes on: regions with redundancy (RAID1, RAID5) survive the loss of one
memory server, and PEs touching other regions get errors.

Options:
  -n N               number of PEs to start (required, at least 1)
  --servers K        memory servers of the private famd set (default 1: one
                     famd holding metadata and memory); not with
                     OPENFAM_SERVER
  --timeout DUR      stop the whole job after DUR (Go duration: 90s, 5m) and
                     exit 124
  --grace DUR        time a PE gets between SIGTERM and SIGKILL when the job
                     is being stopped (default 3s)
  --startup DUR      how long to wait for the private famd (set) to be ready,
                     memory servers joined included (default 20s)
  --provider NAME    data-plane provider of the private famds (famd
                     --provider): tcp (the default, the project's own
                     protocol) or a libfabric provider such as
                     "tcp;ofi_rxm" or sockets; the PEs get it as
                     OPENFAM_PROVIDER, so one setting serves the job
                     (default $OPENFAM_PROVIDER, else tcp). With
                     OPENFAM_SERVER it is only given to the PEs
  --label            prefix every line a PE writes with "[RANK] "
  --keep             keep the private famd's temporary directory (data, logs,
                     token) and print where it is
  --verbose          copy the private famds' logs to famrun's stderr, each
                     line prefixed with [famd] or [famd memK]
  --version          print famrun's version and exit
  -h, --help         print this help

Environment given to every PE (on top of famrun's own environment):
  FAMRUN_JOB         random hex id of this job (names its barrier at famd)
  FAMRUN_RANK        the PE's rank, 0 .. N-1
  FAMRUN_SIZE        N
  PMI_RANK, PMI_SIZE the same rank and size, for PMI-style readers
  OPENFAM_SERVER     the famd the PE talks to: unix:<tmpdir>/famd.sock for the
                     private famd, else the value famrun was given
  OPENFAM_PROVIDER   --provider (or the inherited value), when one is set
  OPENFAM_TOKEN_FILE with --servers K > 1: the job's cluster token
                     (<tmpdir>/token), for the memory famds' TCP data planes;
                     otherwise inherited from famrun's environment

Environment read by famrun:
  OPENFAM_SERVER     use this server (unix:/path or host:port) instead of a
                     private famd
  OPENFAM_PROVIDER   default of --provider
  FAMD               path of the famd binary; when unset famrun uses the famd
                     next to its own binary, else the first famd on PATH
  FAMRUN_STATE       with --servers K > 1: once the set is ready, famrun
                     writes this file (JSON, mode 0600): the PEs'
                     OPENFAM_SERVER, the token files, and for each memory
                     famd its pid, server id, log, data directory, addresses
                     and "restart", the command that starts it again on the
                     same data directory and ports so that it rejoins with
                     its id (tests kill and restart memory famds this way;
                     famrun does not watch a restarted famd, whoever starts
                     it stops it). The server token is then kept until the
                     job ends, for those restarts
  TMPDIR             where the private famd's temporary directory is made

Input and output: each PE's stdout and stderr go to famrun's stdout and
stderr. Rank 0 reads famrun's stdin when it is a pipe or a file; the other
PEs (and rank 0 when stdin is a terminal) read /dev/null. Each PE runs in a
process group of its own, so stopping a PE also stops what it started.

Exit status:
  0       every PE exited 0
  S       the first PE to fail exited with status S; the others were stopped
          (SIGTERM, then SIGKILL after the grace time)
  128+SIG the first PE to fail was killed by signal SIG
  124     --timeout expired
  126/127 PROGRAM could not be executed / was not found
  2       usage error (bad flags, --servers with OPENFAM_SERVER)
  1       famrun could not run the job (famd did not start, memory servers
          did not join within --startup, a famd died during the job, ...)

SIGINT, SIGTERM and SIGHUP sent to famrun are passed on to every PE; a second
such signal kills the PEs with SIGKILL.
`

// config is what the command line asks for.
type config struct {
	n        int
	servers  int
	timeout  time.Duration
	grace    time.Duration
	startup  time.Duration
	label    bool
	keep     bool
	verbose  bool
	argv     []string // PROGRAM and its arguments
	progPath string   // PROGRAM resolved on PATH
	// tokenFile is the private famd set's cluster token, given to the PEs
	// as OPENFAM_TOKEN_FILE ("" leaves the inherited value).
	tokenFile string
	// provider is --provider (or $OPENFAM_PROVIDER): the private famds'
	// data plane and the PEs' OPENFAM_PROVIDER; "" when neither is set
	// (famds then run tcp and PEs follow them).
	provider string
	// stateFile is $FAMRUN_STATE: where famrun describes the famd set
	// (--servers K > 1) so that a test can kill and restart memory famds.
	stateFile string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is famrun with its arguments and output streams; it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, status, ok := parseArgs(args, stdout, stderr)
	if !ok {
		return status
	}
	// Caught for famrun's whole life: until the PEs run, a signal cancels
	// the start; while they run, it is passed on; afterwards it must not cut
	// the famd shutdown and cleanup short.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	job := newJobID()
	server := os.Getenv("OPENFAM_SERVER")
	var fd *privateFamd
	if server == "" {
		var err error
		fd, err = startPrivateFamd(cfg, job, sigs, stderr)
		var se signalError
		if errors.As(err, &se) {
			fmt.Fprintf(stderr, "famrun: %v\n", err)
			return 128 + int(se.sig)
		}
		if err != nil {
			fmt.Fprintf(stderr, "famrun: %v\n", err)
			return exitFailure
		}
		server = fd.server()
		cfg.tokenFile = fd.tokenFile
	}
	status = runJob(cfg, job, server, fd, sigs, stdout, stderr)
	if fd != nil {
		fd.stop(stderr)
	}
	return status
}

// signalError reports that famrun was told to stop while starting famd.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string {
	return fmt.Sprintf("interrupted by %v while starting famd", e.sig)
}

// parseArgs reads the command line. It returns ok=false with the status to
// exit with when famrun should not run a job (help, usage errors).
func parseArgs(args []string, stdout, stderr io.Writer) (config, int, bool) {
	cfg := config{}
	fs := flag.NewFlagSet("famrun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&cfg.n, "n", 0, "")
	fs.IntVar(&cfg.servers, "servers", 1, "")
	fs.DurationVar(&cfg.timeout, "timeout", 0, "")
	fs.DurationVar(&cfg.grace, "grace", 3*time.Second, "")
	fs.DurationVar(&cfg.startup, "startup", 20*time.Second, "")
	fs.StringVar(&cfg.provider, "provider", os.Getenv("OPENFAM_PROVIDER"), "")
	fs.BoolVar(&cfg.label, "label", false, "")
	fs.BoolVar(&cfg.keep, "keep", false, "")
	fs.BoolVar(&cfg.verbose, "verbose", false, "")
	showVersion := fs.Bool("version", false, "")
	usage := func(format string, a ...any) (config, int, bool) {
		fmt.Fprintf(stderr, "famrun: "+format+"\n", a...)
		fmt.Fprintln(stderr, "Run 'famrun --help' for usage.")
		return cfg, exitUsage, false
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return cfg, 0, false
		}
		return usage("%v", err)
	}
	if *showVersion {
		fmt.Fprintf(stdout, "famrun %s\n", version.String())
		return cfg, 0, false
	}
	cfg.argv = fs.Args()
	switch {
	case cfg.n < 1:
		return usage("-n N (N >= 1) is required")
	case cfg.servers < 1:
		return usage("--servers must be at least 1")
	case cfg.servers > 1 && os.Getenv("OPENFAM_SERVER") != "":
		return usage("--servers %d starts a private famd set, but OPENFAM_SERVER (%s) names a server to use instead; unset it", cfg.servers, os.Getenv("OPENFAM_SERVER"))
	case cfg.servers > 64:
		return usage("--servers %d: at most 64 memory servers per job", cfg.servers)
	case cfg.timeout < 0 || cfg.grace < 0 || cfg.startup <= 0:
		return usage("durations must not be negative")
	case len(cfg.argv) == 0:
		return usage("no PROGRAM given")
	}
	if msg := checkProvider(cfg.provider); msg != "" {
		return usage("%s", msg)
	}
	p, err := exec.LookPath(cfg.argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "famrun: cannot run %s: %v\n", cfg.argv[0], err)
		if errors.Is(err, os.ErrPermission) {
			return cfg, exitCannotExec, false
		}
		return cfg, exitNotFound, false
	}
	cfg.progPath = p
	cfg.stateFile = os.Getenv("FAMRUN_STATE")
	return cfg, 0, true
}

// newJobID returns 16 random hex digits naming the job.
func newJobID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a fixed id would make two
		// concurrent jobs share a barrier, so a time-based one is the fallback.
		return fmt.Sprintf("%016x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// peEnv is famrun's environment with the launcher variables of one PE set
// (replacing any inherited values), and OPENFAM_TOKEN_FILE set to tokenFile
// unless that is "".
func peEnv(base []string, job string, rank, size int, server, tokenFile string) []string {
	set := map[string]string{
		"FAMRUN_JOB":     job,
		"FAMRUN_RANK":    fmt.Sprint(rank),
		"FAMRUN_SIZE":    fmt.Sprint(size),
		"PMI_RANK":       fmt.Sprint(rank),
		"PMI_SIZE":       fmt.Sprint(size),
		"OPENFAM_SERVER": server,
	}
	keys := []string{"FAMRUN_JOB", "FAMRUN_RANK", "FAMRUN_SIZE", "PMI_RANK", "PMI_SIZE", "OPENFAM_SERVER"}
	if tokenFile != "" {
		set["OPENFAM_TOKEN_FILE"] = tokenFile
		keys = append(keys, "OPENFAM_TOKEN_FILE")
	}
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := set[k]; !replaced {
			env = append(env, kv)
		}
	}
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	return env
}
