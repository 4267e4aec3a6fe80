package rpc_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// lineLog collects formatted log lines, safe for concurrent use.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *lineLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// An allocation that finds no space (the heap of a small region is
// core.MinRegionSize) is a warning in famd's log (the
// caller gets FAM_ERR_NO_SPACE; the operator should learn that a region
// is full), naming the item and the caller.
func TestNoSpaceIsLogged(t *testing.T) {
	var info, warn lineLog
	_, c := start(t, embed.Options{ClusterLogf: info.logf, WarnLogf: warn.logf})
	rr, err := c.CreateRegion(ctx(t), &pb.CreateRegionRequest{Name: "small", Size: 1 << 16, Mode: 0o600})
	if err != nil || rr.GetErr() != nil {
		t.Fatalf("CreateRegion: %v %v", err, rr.GetErr())
	}
	if !info.has(`region "small" created: 65536 bytes`) {
		t.Errorf("region creation not logged at info: %q", info.lines)
	}
	ar, err := c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: rr.GetRegion().GetId(), Name: "big", Size: 4 << 20, Mode: 0o600})
	if err != nil || core.Code(ar.GetErr().GetCode()) != core.CodeNoSpace {
		t.Fatalf("Allocate beyond the region: %v %v %v", err, ar.GetErr(), ar)
	}
	if !warn.has(`no space for item "big" of 4194304 bytes`) {
		t.Errorf("no-space allocation not logged at warn: %q", warn.lines)
	}
}
