package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gofam/openfam/core/fabric"
)

// TestProviderUnknown: a provider libfabric does not have (or libfabric
// itself missing) stops famd at start with exit status 1 and a message
// naming the provider and how to list the ones the host has; nothing is
// served. Both roles that open an endpoint are checked.
func TestProviderUnknown(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--socket", dir + "/s", "--provider", "no-such-provider"},
		{"--role", "memory", "--join", "unix:" + dir + "/meta", "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--provider", "no-such-provider"},
	} {
		code, _, stderr := runFamd(t, append(args, "--data-dir", dir+"/data")...)
		if code != 1 || !strings.Contains(stderr, "provider \\\"no-such-provider") || !strings.Contains(stderr, "fi_info -l") {
			t.Errorf("famd %q: exit %d, stderr %q; want exit 1 naming the provider and fi_info -l", args, code, stderr)
		}
	}
}

// TestProviderUsage: what can never be a provider is a usage error, and
// --help documents the choice with its table.
func TestProviderUsage(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"", "tcp ofi_rxm", "bad\x01"} {
		code, _, stderr := runFamd(t, "--socket", dir+"/s", "--data-dir", dir+"/data", "--provider", p)
		if code != 2 || !strings.Contains(stderr, "--provider") {
			t.Errorf("--provider %q: exit %d, stderr %q; want a usage error", p, code, stderr)
		}
	}
	_, out, _ := runFamd(t, "--help")
	for _, want := range []string{"--provider", "tcp;ofi_rxm", "sockets", "fi_info -l", "fam_map", "FI_FENCE"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}

// TestProviderGracefulStop: a famd on a libfabric provider still stops
// gracefully on SIGTERM (exit 0, "stopped"): libfabric's providers replace
// SIGTERM's handler when the endpoint opens, and famd must put Go's back.
// It runs on the providers of $OPENFAM_TEST_PROVIDERS (comma-separated;
// make test-fabric-fault sets them).
func TestProviderGracefulStop(t *testing.T) {
	var provs []string
	for _, p := range strings.Split(os.Getenv("OPENFAM_TEST_PROVIDERS"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			provs = append(provs, p)
		}
	}
	if len(provs) == 0 {
		t.Skip("no libfabric provider named: set OPENFAM_TEST_PROVIDERS (make test-fabric-fault does)")
	}
	for _, p := range provs {
		t.Run(strings.ReplaceAll(p, ";", "+"), func(t *testing.T) {
			dir := t.TempDir()
			f := startFamd(t, "--socket", dir+"/s", "--data-dir", dir+"/data", "--provider", p)
			f.waitLine(t, "data-plane provider "+p)
			code, log := f.stop(t, syscall.SIGTERM)
			if code != 0 || !strings.Contains(log, "stopped") {
				t.Fatalf("famd --provider %s on SIGTERM: exit %d; log:\n%s", p, code, log)
			}
		})
	}
}

// TestProviderIfDevice: --if-device (default $OPENFAM_IF_DEVICE), OpenFAM's
// if_device, reaches the endpoint: a device the provider has no domain of
// stops famd at start naming it (with the domains there are), in both
// roles that open an endpoint; --help documents it.
func TestProviderIfDevice(t *testing.T) {
	_, out, _ := runFamd(t, "--help")
	for _, want := range []string{"--if-device", "OPENFAM_IF_DEVICE", "if_device", "FI_"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
	if ep, err := fabric.Open("sockets", fabric.Options{}); err != nil {
		t.Skipf("SKIP provider sockets: not available here: %v", err)
	} else {
		ep.Close()
	}
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--socket", dir + "/s", "--provider", "sockets", "--if-device", "nosuchdev9"},
		{"--role", "memory", "--join", "unix:" + dir + "/meta", "--listen", "tcp://127.0.0.1:0", "--token-file", tok, "--provider", "sockets", "--if-device", "nosuchdev9"},
	} {
		code, _, stderr := runFamd(t, append(args, "--data-dir", dir+"/data")...)
		if code != 1 || !strings.Contains(stderr, "nosuchdev9") || !strings.Contains(stderr, "lo") {
			t.Errorf("famd %q: exit %d, stderr %q; want exit 1 naming the device and the domains there are", args, code, stderr)
		}
	}
	cmd := exec.Command(famdBin, "--socket", dir+"/s2", "--data-dir", dir+"/data2", "--provider", "sockets")
	cmd.Env = append(cleanEnv(), "OPENFAM_IF_DEVICE=nosuchdev8")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), "nosuchdev8") {
		t.Errorf("OPENFAM_IF_DEVICE=nosuchdev8: %v, stderr %q; want exit 1 naming the device", err, stderr.String())
	}
}
