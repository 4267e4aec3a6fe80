package main

import (
	"strings"
	"testing"
)

// famctl servers shows the persistence policies (issue 20): famd's own,
// and what a program started from this environment gets.
func TestServersShowsPersistencePolicy(t *testing.T) {
	f := startFamd(t)
	t.Setenv("OPENFAM_PERSIST", "lazy")
	t.Setenv("OPENFAM_PERSIST_INTERVAL", "2s")
	out := f.ok(t, "servers")
	if !strings.Contains(out, "famd quiet; programs here lazy 2s") {
		t.Errorf("servers does not show the persistence policies:\n%s", out)
	}
	var srv struct{ Servers []serverJSON }
	f.okJSON(t, &srv, "servers")
	if len(srv.Servers) != 1 || srv.Servers[0].Persist != "quiet" || srv.Servers[0].ClientPersist != "lazy 2s" {
		t.Errorf("servers --json: %+v", srv)
	}
	t.Setenv("OPENFAM_PERSIST", "never")
	if out := f.ok(t, "servers"); !strings.Contains(out, "programs here invalid") {
		t.Errorf("servers with a bad OPENFAM_PERSIST:\n%s", out)
	}
}
