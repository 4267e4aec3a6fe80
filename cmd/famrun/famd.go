package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofam/openfam/core/rpc"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// maxSockPath keeps the socket path (and its ".data" sibling) within the
// 108 bytes of sockaddr_un.sun_path.
const maxSockPath = 100

// famdStopWait is how long famd gets to shut down after SIGTERM before it is
// killed.
const famdStopWait = 10 * time.Second

// joinedMarker is what a memory famd logs once the metadata famd accepted
// it (see cmd/famd); only used to say which servers did not join.
const joinedMarker = "joined the metadata famd"

// daemon is one famd process of the job. Its fields are set before the
// goroutines that publish through ready, exited and waitErr start.
type daemon struct {
	name    string // "famd", or "memory famd K" in a --servers K job
	logPath string
	cmd     *exec.Cmd
	ready   chan struct{} // closed by the log copier when famd logs "serving"
	exited  chan struct{} // closed when famd has exited; waitErr set
	waitErr error
	logDone chan struct{} // closed when the log copier has finished
}

// privateFamd is the set of famd processes famrun starts for one job: one
// famd with role all (--servers 1), or a metadata famd and K memory famds.
// Its methods are called from famrun's main goroutine only.
type privateFamd struct {
	dir       string // temporary directory: sockets, data, logs, token
	sock      string // the control socket PEs use
	shm       string // volatile regions (of every famd); removed with dir
	tokenFile string // "" with --servers 1
	// serverTokenFile is the credential with which the memory famds join
	// the metadata famd ("" with --servers 1). Only famds get it.
	serverTokenFile string
	keep            bool
	daemons         []*daemon // [0] serves sock; the rest are memory servers

	// exited is closed once any daemon has exited; dead is that daemon.
	exited   chan struct{}
	dead     *daemon
	exitOnce sync.Once
	// deaths receives every daemon that exits (buffered for all of them),
	// so that the job loop hears of each memory famd's death, not only
	// the first.
	deaths chan *daemon
}

// findFamd locates the famd binary: $FAMD, then next to famrun, then PATH.
func findFamd() (string, error) {
	if p := os.Getenv("FAMD"); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "famd")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("famd"); err == nil {
		return p, nil
	}
	return "", errors.New("famd not found: set OPENFAM_SERVER to use a running famd, or put famd next to famrun, on PATH, or in $FAMD")
}

// startPrivateFamd creates the job's temporary directory, starts the job's
// famd (with --servers K > 1: a metadata famd and K memory famds) and waits
// until it serves on its socket and, with memory servers, until all of
// them joined (at most cfg.startup in all). On error nothing is left
// running and the directory is removed (unless cfg.keep). A signal on sigs
// cancels the start with a signalError.
func startPrivateFamd(cfg config, job string, sigs <-chan os.Signal, stderr io.Writer) (*privateFamd, error) {
	bin, err := findFamd()
	if err != nil {
		return nil, err
	}
	// The longest socket is a memory server's data socket.
	longest := "famd.sock.data"
	if cfg.servers > 1 {
		longest = fmt.Sprintf("mem%d.data.sock", cfg.servers)
	}
	dir, err := os.MkdirTemp("", "famrun-"+job[:8]+"-")
	if err == nil && len(filepath.Join(dir, longest)) > maxSockPath {
		// A long $TMPDIR cannot hold a socket; /tmp can.
		os.Remove(dir)
		dir, err = os.MkdirTemp("/tmp", "famrun-"+job[:8]+"-")
	}
	if err != nil {
		return nil, fmt.Errorf("temporary directory for famd: %w", err)
	}
	f := &privateFamd{
		dir:    dir,
		sock:   filepath.Join(dir, "famd.sock"),
		shm:    filepath.Join(dir, "shm"),
		keep:   cfg.keep,
		exited: make(chan struct{}),
		deaths: make(chan *daemon, cfg.servers+1),
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		// Volatile regions belong on tmpfs, as with a system famd, but in
		// a directory of the job's own so jobs cannot see each other's.
		f.shm = filepath.Join("/dev/shm", "famrun-"+job)
	}
	if err := f.start(bin, cfg, sigs, stderr); err != nil {
		f.removeFiles(stderr)
		return nil, err
	}
	return f, nil
}

// server is the OPENFAM_SERVER value that points a PE at this famd.
func (f *privateFamd) server() string { return "unix:" + f.sock }

func (f *privateFamd) start(bin string, cfg config, sigs <-chan os.Signal, stderr io.Writer) error {
	deadline := time.NewTimer(cfg.startup)
	defer deadline.Stop()
	data := filepath.Join(f.dir, "data")
	args := []string{"--socket", f.sock, "--data-dir", data}
	args = append(args, providerArgs(cfg)...)
	shm := f.shm
	if cfg.servers > 1 {
		args = append(args, "--role", "metadata")
		shm = filepath.Join(f.shm, "metadata")
		if err := f.writeTokens(); err != nil {
			return err
		}
		args = append(args, "--server-token-file", f.serverTokenFile)
	}
	env := append(os.Environ(),
		"OPENFAM_DATA_DIR="+data,
		"OPENFAM_SHM_DIR="+shm,
		"OPENFAM_BACKUP_DIR="+filepath.Join(f.dir, "backups"))
	meta, err := f.spawn("famd", "famd", bin, args, env, cfg.verbose, stderr)
	if err != nil {
		return err
	}
	if err := f.awaitServing(meta, cfg, deadline.C, sigs); err != nil {
		return err
	}
	if cfg.servers == 1 {
		return nil
	}
	for k := 1; k <= cfg.servers; k++ {
		name := fmt.Sprint("mem", k)
		d := filepath.Join(f.dir, name)
		args := []string{"--role", "memory", "--join", "unix:" + f.sock, "--listen", "tcp://127.0.0.1:0",
			"--token-file", f.tokenFile, "--server-token-file", f.serverTokenFile, "--socket", d + ".data.sock", "--data-dir", d,
			"--shm-dir", filepath.Join(f.shm, name)}
		args = append(args, providerArgs(cfg)...)
		if _, err := f.spawn(fmt.Sprint("memory famd ", k), "famd "+name, bin, args, os.Environ(), cfg.verbose, stderr); err != nil {
			f.killAll()
			return err
		}
	}
	if err := f.awaitJoined(cfg, deadline.C, sigs); err != nil {
		return err
	}
	if cfg.stateFile != "" {
		// A test restarts memory famds with the commands written there,
		// and they need the server token to rejoin: it stays.
		if err := f.writeState(cfg, deadline.C); err != nil {
			f.killAll()
			return err
		}
		return nil
	}
	// Every famd has read the server token and the memory famds have
	// joined: no one needs it any more, and the PEs (same user) should not
	// find it lying next to the cluster token.
	if err := os.Remove(f.serverTokenFile); err != nil {
		f.killAll()
		return fmt.Errorf("removing the job's server token: %w", err)
	}
	return nil
}

// writeTokens makes the job's cluster token and server token (files of
// mode 0600). The memory famds serve their data planes on TCP with the
// cluster token, and PEs present it there; the server token proves to the
// metadata famd that a joining process is one of the job's memory famds,
// and is given to famds only (a PE could otherwise join as a memory server
// and receive the bytes of new regions).
func (f *privateFamd) writeTokens() error {
	write := func(name, what string) (string, error) {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		p := filepath.Join(f.dir, name)
		if err := os.WriteFile(p, []byte(hex.EncodeToString(b[:])+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		return p, nil
	}
	var err error
	if f.tokenFile, err = write("token", "cluster token"); err != nil {
		return err
	}
	f.serverTokenFile, err = write("server-token", "server token")
	return err
}

// spawn starts one famd with its output going to DIR/<tag>.log and adds it
// to the set; logTag prefixes its lines with --verbose.
func (f *privateFamd) spawn(name, logTag, bin string, args, env []string, verbose bool, stderr io.Writer) (*daemon, error) {
	d := &daemon{
		name:    name,
		logPath: filepath.Join(f.dir, strings.ReplaceAll(logTag, " ", "-")+".log"),
		ready:   make(chan struct{}),
		exited:  make(chan struct{}),
		logDone: make(chan struct{}),
	}
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("famd log: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("famd log pipe: %w", err)
	}
	d.cmd = &exec.Cmd{
		Path:   bin,
		Args:   append([]string{bin}, args...),
		Env:    env,
		Stdout: pw,
		Stderr: pw,
		SysProcAttr: &syscall.SysProcAttr{
			// Out of the terminal's process group: famrun stops famd only
			// after the PEs, so a Ctrl-C must not reach famd first.
			Setpgid:   true,
			Pdeathsig: syscall.SIGTERM,
		},
	}
	err = d.cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		logf.Close()
		return nil, fmt.Errorf("cannot start %s (%s): %w", name, bin, err)
	}
	f.daemons = append(f.daemons, d)
	go d.copyLog(pr, logf, "["+logTag+"] ", verbose, stderr)
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
		f.exitOnce.Do(func() {
			f.dead = d
			close(f.exited)
		})
		f.deaths <- d
	}()
	return d, nil
}

// awaitServing waits until d logs that it serves and its control socket
// accepts connections. On failure it kills every daemon of the set.
func (f *privateFamd) awaitServing(d *daemon, cfg config, deadline <-chan time.Time, sigs <-chan os.Signal) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	serving := false
	ready := d.ready
	for {
		select {
		case <-ready:
			serving = true
			ready = nil // a closed channel would spin the loop
		case <-tick.C:
			if serving && f.dialable() {
				return nil
			}
		case <-d.exited:
			<-d.logDone
			f.killAll()
			return fmt.Errorf("%s (%s) exited before it was ready (%v)\n%s", d.name, d.cmd.Path, d.exitErr(), d.logTail())
		case s := <-sigs:
			f.killAll()
			return signalError{s.(syscall.Signal)}
		case <-deadline:
			f.killAll()
			what := "did not log that it is serving"
			if serving {
				what = "did not accept connections on " + f.sock
			}
			return fmt.Errorf("%s (%s) %s within %v\n%s", d.name, d.cmd.Path, what, cfg.startup, d.logTail())
		}
	}
}

// awaitJoined polls the metadata famd's Servers call until every memory
// famd has joined and answers it. On failure it kills every daemon.
func (f *privateFamd) awaitJoined(cfg config, deadline <-chan time.Time, sigs <-chan os.Signal) error {
	conn, err := rpc.DialUnix(f.sock, cfg.startup)
	if err != nil {
		f.killAll()
		return fmt.Errorf("the job's metadata famd at %s: %w", f.sock, err)
	}
	defer conn.Close()
	fam := pb.NewFamClient(conn)
	want := len(f.daemons) - 1
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		select {
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			rep, err := fam.Servers(ctx, &pb.ServersRequest{Probe: true})
			cancel()
			reachable := 0
			switch {
			case err != nil:
				last = err.Error()
			case rep.GetErr() != nil:
				last = rep.GetErr().GetMsg()
			default:
				for _, s := range rep.GetServers() {
					if s.GetReachable() {
						reachable++
					}
				}
				last = fmt.Sprintf("%d of %d memory servers joined and reachable", reachable, want)
			}
			if reachable >= want {
				return nil
			}
		case <-f.exited:
			d := f.dead
			<-d.logDone
			f.killAll()
			return fmt.Errorf("%s (%s) exited while the job's famd set was starting (%v)\n%s", d.name, d.cmd.Path, d.exitErr(), d.logTail())
		case s := <-sigs:
			f.killAll()
			return signalError{s.(syscall.Signal)}
		case <-deadline:
			f.killAll()
			var tails strings.Builder
			for _, d := range f.daemons[1:] {
				if b, _ := os.ReadFile(d.logPath); !bytes.Contains(b, []byte(joinedMarker)) {
					tails.WriteString(d.name + " did not join:\n" + d.logTail())
				}
			}
			return fmt.Errorf("the %d memory famds did not all join the job's metadata famd within %v (%s)\n%s",
				want, cfg.startup, last, tails.String())
		}
	}
}

// dialable reports whether famd's control socket accepts a connection.
func (f *privateFamd) dialable() bool {
	c, err := net.DialTimeout("unix", f.sock, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// copyLog copies famd's output into its log file (and famrun's stderr with
// --verbose, each line behind prefix) and closes ready at the first line
// that says "serving".
func (d *daemon) copyLog(r io.ReadCloser, logf *os.File, prefix string, verbose bool, stderr io.Writer) {
	defer close(d.logDone)
	defer logf.Close()
	defer r.Close()
	ready := d.ready
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logf, line)
		if verbose {
			fmt.Fprintf(stderr, "%s%s\n", prefix, line)
		}
		if ready != nil && strings.Contains(line, "serving") {
			close(ready)
			ready = nil
		}
	}
}

// exitErr describes how famd ended; call only after exited is closed.
func (d *daemon) exitErr() string {
	if d.waitErr == nil {
		return "exit status 0"
	}
	return d.waitErr.Error()
}

// logTail returns the last lines famd logged, indented, for error messages.
func (d *daemon) logTail() string {
	b, err := os.ReadFile(d.logPath)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return "  (" + d.name + " logged nothing)\n"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	var sb strings.Builder
	sb.WriteString("  " + d.name + " log (" + d.logPath + "):\n")
	for _, l := range lines {
		sb.WriteString("  | " + l + "\n")
	}
	return sb.String()
}

// deathReport says that famd d of the set died during the job and how;
// call only after d exited.
func (f *privateFamd) deathReport(d *daemon) string {
	<-d.logDone
	return fmt.Sprintf("the job's %s exited while the job was running (%v)\n%s", d.name, d.exitErr(), d.logTail())
}

// killAll ends every famd of the set at once (and anything they started)
// and waits for them.
func (f *privateFamd) killAll() {
	for _, d := range f.daemons {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	}
	for _, d := range f.daemons {
		<-d.exited
		<-d.logDone
	}
}

// stop shuts the set down (SIGTERM to every famd at once, SIGKILL to those
// still running famdStopWait later) and removes the job's files unless
// --keep was given.
func (f *privateFamd) stop(stderr io.Writer) {
	var running []*daemon
	for _, d := range f.daemons {
		select {
		case <-d.exited:
			// An unexpected death was reported by the job loop.
		default:
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			running = append(running, d)
		}
	}
	deadline := time.Now().Add(famdStopWait)
	for _, d := range running {
		select {
		case <-d.exited:
			if d.waitErr != nil {
				<-d.logDone
				fmt.Fprintf(stderr, "famrun: %s did not shut down cleanly (%v)\n%s", d.name, d.waitErr, d.logTail())
			}
		case <-time.After(time.Until(deadline)):
			fmt.Fprintf(stderr, "famrun: %s did not stop within %v of SIGTERM; killing it\n", d.name, famdStopWait)
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.exited
		}
	}
	for _, d := range f.daemons {
		// Children famd may have left in its group go with it.
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.logDone
	}
	f.removeFiles(stderr)
}

// removeFiles deletes the temporary directory and shm directory, or says
// where they are with --keep.
func (f *privateFamd) removeFiles(stderr io.Writer) {
	if f.keep {
		logs := filepath.Join(f.dir, "famd.log")
		if len(f.daemons) > 1 {
			logs = filepath.Join(f.dir, "*.log")
		}
		fmt.Fprintf(stderr, "famrun: kept %s (famd log: %s, volatile regions: %s)\n", f.dir, logs, f.shm)
		return
	}
	var errs []error
	for _, p := range []string{f.shm, f.dir} {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "famrun: cleaning up: %v\n", err)
	}
}

// memoryState is one memory famd in the FAMRUN_STATE file.
type memoryState struct {
	K       int    `json:"k"`
	PID     int    `json:"pid"`
	ID      uint64 `json:"id"` // the memory server id the metadata famd gave it
	Log     string `json:"log"`
	DataDir string `json:"data_dir"`
	Control string `json:"control"`  // control gRPC, host:port
	DataTCP string `json:"data_tcp"` // data plane, host:port
	// Restart is the command that starts it again on the same data
	// directory, ports and sockets, so that it rejoins with its id.
	Restart []string `json:"restart"`
}

// jobState is what famrun writes to FAMRUN_STATE.
type jobState struct {
	Dir             string        `json:"dir"`
	Server          string        `json:"server"` // the PEs' OPENFAM_SERVER
	TokenFile       string        `json:"token_file"`
	ServerTokenFile string        `json:"server_token_file"`
	FamdPID         int           `json:"famd_pid"`
	MemoryFamds     []memoryState `json:"memory_famds"`
}

var (
	memJoinedRE = regexp.MustCompile(`as memory server (\d+)`)
	memAddrsRE  = regexp.MustCompile(`control gRPC on tcp://([^,\s]+), data plane tcp://(\S+)`)
)

// writeState writes cfg.stateFile (JSON, mode 0600, replaced atomically):
// the set's socket and tokens, and for each memory famd its pid, id,
// addresses and the command that restarts it. It waits (until deadline)
// for each memory famd's log to name its id and addresses.
func (f *privateFamd) writeState(cfg config, deadline <-chan time.Time) error {
	st := jobState{Dir: f.dir, Server: f.server(), TokenFile: f.tokenFile, ServerTokenFile: f.serverTokenFile,
		FamdPID: f.daemons[0].cmd.Process.Pid}
	for k, d := range f.daemons[1:] {
		var id, addrs [][]byte
		for {
			b, _ := os.ReadFile(d.logPath)
			id, addrs = memJoinedRE.FindSubmatch(b), memAddrsRE.FindSubmatch(b)
			if id != nil && addrs != nil {
				break
			}
			select {
			case <-deadline:
				return fmt.Errorf("FAMRUN_STATE: %s did not log its id and addresses within %v\n%s", d.name, cfg.startup, d.logTail())
			case <-time.After(20 * time.Millisecond):
			}
		}
		m := memoryState{K: k + 1, PID: d.cmd.Process.Pid, Log: d.logPath, Control: string(addrs[1]), DataTCP: string(addrs[2])}
		m.ID, _ = strconv.ParseUint(string(id[1]), 10, 64)
		args := d.cmd.Args
		for i := 0; i < len(args); i++ {
			switch {
			case args[i] == "--listen" && i+1 < len(args):
				m.Restart = append(m.Restart, args[i], "tcp://"+m.Control, "--data-listen", m.DataTCP)
				i++
			case args[i] == "--data-dir" && i+1 < len(args):
				m.DataDir = args[i+1]
				m.Restart = append(m.Restart, args[i])
			default:
				m.Restart = append(m.Restart, args[i])
			}
		}
		st.MemoryFamds = append(st.MemoryFamds, m)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := cfg.stateFile + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("FAMRUN_STATE: %w", err)
	}
	if err := os.Rename(tmp, cfg.stateFile); err != nil {
		return fmt.Errorf("FAMRUN_STATE: %w", err)
	}
	return nil
}
