package rpc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gofam/openfam/core/metadata"
)

// clusterRebuilder is the Rebuilder over the memory servers' Rebuild and
// RebuildStatus calls (Cluster.Rebuild, Cluster.RebuildStatus).
type clusterRebuilder struct {
	c  *Cluster
	mu sync.Mutex
	// asked is when famd last asked target to rebuild a region: the
	// status lists every rebuild since the server started, and only
	// those running or started since count.
	asked map[copyKey]time.Time
}

func newClusterRebuilder(c *Cluster) *clusterRebuilder {
	return &clusterRebuilder{c: c, asked: map[copyKey]time.Time{}}
}

// StartRebuild implements Rebuilder; the memory servers rebuild whole
// segments, so from is not used.
func (r *clusterRebuilder) StartRebuild(_ context.Context, target uint64, rec metadata.Region, _ uint64) error {
	r.mu.Lock()
	r.asked[copyKey{rec.ID, target}] = time.Now()
	r.mu.Unlock()
	return r.c.Rebuild(rec, target)
}

// RebuildProgress implements Rebuilder: the sum over the region's
// segments on target (data and mirror, or data and parity), each the
// latest rebuild of its kind.
func (r *clusterRebuilder) RebuildProgress(_ context.Context, target, regionID uint64) (RebuildProgress, error) {
	r.mu.Lock()
	since := r.asked[copyKey{regionID, target}]
	r.mu.Unlock()
	ps, err := r.c.RebuildStatus(target)
	if err != nil {
		return RebuildProgress{}, err
	}
	type latest struct {
		started uint64
		i       int
	}
	byKind := map[uint32]latest{}
	for i, p := range ps {
		if p.GetRegionId() != regionID {
			continue
		}
		if p.GetState() != "rebuilding" && p.GetStartedNs() < uint64(since.UnixNano()) {
			continue // an earlier rebuild's result
		}
		if l, ok := byKind[p.GetKind()]; !ok || p.GetStartedNs() >= l.started {
			byKind[p.GetKind()] = latest{p.GetStartedNs(), i}
		}
	}
	if len(byKind) == 0 {
		return RebuildProgress{}, fmt.Errorf("memory server %d lists no rebuild of region %d", target, regionID)
	}
	out := RebuildProgress{Finished: true}
	for _, l := range byKind {
		p := ps[l.i]
		out.Done += p.GetBytesDone()
		out.Total += p.GetBytesTotal()
		switch p.GetState() {
		case "done":
		case "failed":
			out.Failed = p.GetError()
			out.Finished = false
		default:
			out.Finished = false
		}
	}
	return out, nil
}
