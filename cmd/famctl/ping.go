package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// pingCommand is "famctl ping": a health check for scripts, monitoring and
// service managers.
var pingCommand = &command{name: "ping", summary: "check that the famd answers (a health check)", max: 0, local: cmdPing,
	help: "Connects to the famd and calls Info within --timeout. Prints\n" +
		"\"famd at ADDR: ok (version V, uptime U)\" and exits 0 when it answers;\n" +
		"otherwise prints why (no such socket, connection refused, wrong token,\n" +
		"no answer in time) and exits 1.\n\n" +
		"With --json: {\"server\": ADDR, \"ok\": true, \"version\", \"server_version\",\n" +
		"\"uptime_ns\"} on success.\n"}

// cmdPing calls Info once. It runs as a local command so that it can
// word every failure, including one to connect, as the health check's
// answer ("famd at X: not ok: ...").
func cmdPing(g *globals, _ *cmdOpts, _ []string, stdout io.Writer) error {
	addr := g.server
	if addr == "" {
		addr = os.Getenv("OPENFAM_SERVER")
	}
	notOK := func(err error) error {
		var ue *usageError
		if errors.As(err, &ue) {
			return err
		}
		// dial already names the address; say it once.
		msg := strings.TrimPrefix(err.Error(), "cannot reach famd at "+addr+": ")
		msg = strings.TrimPrefix(msg, "famd at "+addr+": ")
		return fmt.Errorf("famd at %s: not ok: %s", addr, msg)
	}
	start := time.Now()
	s, err := dial(g)
	if err != nil {
		return notOK(err)
	}
	defer s.conn.Close()
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.Info(ctx, &pb.InfoRequest{})
	if err == nil {
		err = check(r.GetErr())
	}
	if err != nil {
		if time.Since(start) >= g.timeout {
			return notOK(fmt.Errorf("no answer within %v: %w", g.timeout, err))
		}
		return notOK(err)
	}
	if g.json {
		s.stdout = stdout
		return s.emit(map[string]any{"server": addr, "ok": true, "version": r.GetVersion(),
			"server_version": r.GetServerVersion(), "uptime_ns": r.GetUptimeNs()})
	}
	_, err = fmt.Fprintf(stdout, "famd at %s: ok (OpenFAM %s, famd %s, uptime %s)\n", addr, r.GetVersion(),
		orDash(r.GetServerVersion()), fmtUptime(r.GetUptimeNs()))
	return err
}
