package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core/rpc"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// SIGHUP used to kill famd silently, leaving its socket files behind: now
// famd logs it and goes on serving. SIGTERM and SIGQUIT (like SIGINT)
// stop it with exit status 0, a line naming the signal, and no socket
// file left.
func TestSignals(t *testing.T) {
	for _, stop := range []syscall.Signal{syscall.SIGTERM, syscall.SIGQUIT} {
		t.Run(signalName(stop), func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "famd.sock")
			f := startFamd(t, "--socket", sock, "--data-dir", filepath.Join(dir, "data"))
			f.waitLine(t, "serving")
			if err := f.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			if l := f.waitLine(t, "SIGHUP"); !strings.Contains(l, "ignored") {
				t.Fatalf("SIGHUP line %q does not say it is ignored", l)
			}
			// Still serving after the SIGHUP.
			conn, err := rpc.DialUnix(sock, 60*time.Second)
			if err != nil {
				t.Fatalf("after SIGHUP: %v", err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := pb.NewFamClient(conn).Info(ctx, &pb.InfoRequest{}); err != nil {
				t.Fatalf("Info after SIGHUP: %v", err)
			}
			code, log := f.stop(t, stop)
			if code != 0 || !strings.Contains(log, signalName(stop)+": stopping") || !strings.Contains(log, "stopped") {
				t.Fatalf("after %s: exit %d, log:\n%s", signalName(stop), code, log)
			}
			for _, p := range []string{sock, sock + ".data"} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s left behind after %s: %v", p, signalName(stop), err)
				}
			}
		})
	}
}
