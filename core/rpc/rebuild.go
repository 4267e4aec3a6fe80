package rpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/metadata"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// recover brings server id, down and answering again, back: it re-issues
// the live keys on it, tells every client it is rebuilding (writes go to
// it again, reads not yet), waits for them to have heard, rebuilds every
// stale copy on it one region at a time, and then marks it up. It stops
// when the server changes state meanwhile (down again) or famd stops;
// the copies not rebuilt stay stale, and the next recovery resumes.
func (h *health) recover(id, gen uint64, why string) {
	if h.regrant != nil {
		// A restarted server holds no grants: the keys clients hold must
		// work on it before they are told to write to it.
		h.regrant(id)
	}
	regs, ok := h.staleRegionsRetrying(id, gen)
	if !ok {
		return
	}
	h.mu.Lock()
	sh := h.servers[id]
	if sh == nil || sh.gen != gen {
		h.mu.Unlock()
		return
	}
	if len(regs) == 0 {
		h.setLocked(id, sh, pb.ServerState_SERVER_UP, why+"; no stale copy on it")
		h.mu.Unlock()
		return
	}
	h.setLocked(id, sh, pb.ServerState_SERVER_REBUILDING, fmt.Sprintf("%s; rebuilding its copies of %d redundant regions", why, len(regs)))
	gen = sh.gen
	h.mu.Unlock()

	// Every client must write to the server before its copy is made from
	// the survivors, or a write that skipped it after the copy passed its
	// block would be missing from the rebuilt copy.
	if h.delivered != nil && !h.delivered(time.Now().Add(10*h.opts.Settle)) {
		h.logf("famd: memory server %d: not every client session took the rebuilding state within %v; rebuilding anyway", id, 10*h.opts.Settle)
	}
	if !h.wait(h.opts.Settle) {
		return
	}
	start := time.Now()
	var bytes uint64
	n := 0
	for len(regs) > 0 {
		for _, rec := range regs {
			b, ok := h.rebuildRegion(id, gen, rec)
			if !ok {
				return
			}
			bytes += b
			n++
		}
		// A copy made stale while this ran (it cannot, while the server
		// is rebuilding, but the state must not lie) is rebuilt too.
		if regs, ok = h.staleRegionsRetrying(id, gen); !ok {
			return
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if sh.gen != gen {
		return
	}
	h.setLocked(id, sh, pb.ServerState_SERVER_UP, fmt.Sprintf("rebuilt %d redundant regions (%s) in %v",
		n, sizeText(bytes), time.Since(start).Round(time.Millisecond)))
}

// staleRegions returns the regions of id's stale copies that still exist
// (dropping the records of destroyed ones), by id. On an error (the
// regions cannot be listed) it drops nothing: a copy famd cannot place
// stays stale.
func (h *health) staleRegions(id uint64) ([]metadata.Region, error) {
	h.mu.Lock()
	n := h.staleCountLocked(id)
	h.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	list := h.regionSource()
	if list == nil {
		return nil, errors.New("famd cannot list its regions (no region source)")
	}
	recs, err := list()
	if err != nil {
		return nil, fmt.Errorf("listing regions: %w", err)
	}
	byID := map[uint64]metadata.Region{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []metadata.Region
	gone := map[copyKey]*copyRecord{}
	for _, k := range h.staleLocked(id) {
		r, ok := byID[k.Region]
		if !ok || !isRedundant(r) || !slices.Contains(r.Servers, id) {
			delete(h.copies, k)
			gone[k] = nil
			continue
		}
		out = append(out, r)
	}
	if err := h.store.putCopies(gone); err != nil {
		h.logf("famd: forgetting the copies of destroyed regions: %v", err)
	}
	return out, nil
}

// staleRegionsRetrying is staleRegions, tried again every RetryInterval
// until it works; ok is false when the server changed state or famd
// stops first.
func (h *health) staleRegionsRetrying(id, gen uint64) ([]metadata.Region, bool) {
	for {
		regs, err := h.staleRegions(id)
		if err == nil {
			return regs, true
		}
		h.logf("famd: memory server %d: finding its stale copies: %v; trying again in %v", id, err, h.opts.RetryInterval)
		if !h.wait(h.opts.RetryInterval) || !h.current(id, gen) {
			return nil, false
		}
	}
}

// rebuildRegion rebuilds id's copy of rec, retrying until it is current,
// the server changes state, or famd stops. It returns the bytes rebuilt
// and whether the copy is current.
func (h *health) rebuildRegion(id, gen uint64, rec metadata.Region) (uint64, bool) {
	k := copyKey{rec.ID, id}
	warned := false
	for h.current(id, gen) {
		h.mu.Lock()
		none := h.rebuilder == nil
		h.mu.Unlock()
		if none {
			if !warned {
				h.logf("famd: memory server %d: cannot rebuild region %d (%q): %v; its copy stays stale", id, rec.ID, rec.Name, errNoRebuilder)
				warned = true
			}
			if !h.wait(h.opts.RetryInterval) {
				return 0, false
			}
			continue
		}
		inc := h.incarnationOf(id)
		h.mu.Lock()
		c := h.copies[k]
		if c == nil {
			// Made current meanwhile (cannot happen: only this rebuild
			// does that); nothing to do.
			h.mu.Unlock()
			return 0, true
		}
		from := uint64(0)
		if c.Incarnation == inc {
			from = c.Watermark
		}
		h.mu.Unlock()
		if from > 0 {
			h.logf("famd: memory server %d: resuming the rebuild of region %d (%q) at byte %d", id, rec.ID, rec.Name, from)
		} else {
			h.logf("famd: memory server %d: rebuilding region %d (%q) from the other servers %v", id, rec.ID, rec.Name, others(rec.Servers, id))
		}
		n, err := h.runRebuild(id, gen, rec, from, inc)
		if err == nil {
			return n, true
		}
		// Not being rebuilt any more: stale (its watermark kept).
		h.setCopy(k, func(c *copyRecord) { c.State = copyStale })
		if !h.current(id, gen) {
			return 0, false
		}
		h.logf("famd: memory server %d: rebuilding region %d (%q): %v; trying again in %v", id, rec.ID, rec.Name, err, h.opts.RetryInterval)
		if !h.wait(h.opts.RetryInterval) {
			return 0, false
		}
	}
	return 0, false
}

// runRebuild starts one rebuild and follows it to its end, recording its
// watermark and logging its progress (every 10%, or every 5 s).
func (h *health) runRebuild(id, gen uint64, rec metadata.Region, from uint64, inc string) (uint64, error) {
	k := copyKey{rec.ID, id}
	h.mu.Lock()
	rb := h.rebuilder
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), h.c.opts.Timeout)
	err := rb.StartRebuild(ctx, id, rec, from)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("starting: %w", err)
	}
	// Recorded only once the server took the work: a copy shows as
	// rebuilding while something rebuilds it.
	h.setCopy(k, func(c *copyRecord) { c.State, c.Incarnation, c.Watermark = copyRebuilding, inc, from })
	start, lastLog, lastTenth := time.Now(), time.Now(), -1
	failures := 0
	for {
		if !h.wait(h.opts.PollInterval) {
			return 0, fmt.Errorf("famd is stopping")
		}
		if !h.current(id, gen) {
			return 0, fmt.Errorf("memory server %d changed state", id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.c.opts.Timeout)
		p, err := rb.RebuildProgress(ctx, id, rec.ID)
		cancel()
		if err != nil {
			// The probe loop decides whether the server is down; a few
			// lost answers alone do not end the rebuild.
			if failures++; failures >= 5 {
				return 0, fmt.Errorf("progress: %w", err)
			}
			continue
		}
		failures = 0
		if p.Failed != "" {
			return 0, fmt.Errorf("the memory server stopped it: %s", p.Failed)
		}
		h.mu.Lock()
		c := h.copies[k]
		if c != nil && (c.Watermark != p.Done || c.Total != p.Total) && !p.Finished {
			c.Watermark, c.Total = p.Done, p.Total
			if err := h.store.putCopies(map[copyKey]*copyRecord{k: c}); err != nil {
				h.logf("famd: recording the rebuild of region %d on memory server %d: %v", rec.ID, id, err)
			}
		}
		if p.Finished && h.servers[id] != nil && h.servers[id].gen == gen {
			delete(h.copies, k)
			if err := h.store.putCopies(map[copyKey]*copyRecord{k: nil}); err != nil {
				h.logf("famd: recording region %d's copy on memory server %d current: %v", rec.ID, id, err)
			}
			h.mu.Unlock()
			h.logf("famd: memory server %d: region %d (%q) rebuilt: %s in %v", id, rec.ID, rec.Name,
				sizeText(p.Total), time.Since(start).Round(time.Millisecond))
			return p.Total, nil
		}
		h.mu.Unlock()
		tenth := 0
		if p.Total > 0 {
			tenth = int(p.Done * 10 / p.Total)
		}
		if tenth > lastTenth || time.Since(lastLog) >= 5*time.Second {
			h.logf("famd: memory server %d: rebuilding region %d (%q): %s", id, rec.ID, rec.Name, progressText(p.Done, p.Total))
			lastTenth, lastLog = tenth, time.Now()
		}
	}
}

// setCopy changes copy k's record, if it has one, and records it.
func (h *health) setCopy(k copyKey, change func(c *copyRecord)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.copies[k]
	if c == nil {
		return
	}
	change(c)
	if err := h.store.putCopies(map[copyKey]*copyRecord{k: c}); err != nil {
		h.logf("famd: recording region %d's copy on memory server %d: %v", k.Region, k.Server, err)
	}
}

// incarnationOf names server id's current incarnation.
func (h *health) incarnationOf(id uint64) string {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if m := h.c.members[id]; m != nil {
		return incarnation(m.rec.Secret)
	}
	return ""
}

func others(ids []uint64, id uint64) []uint64 {
	var out []uint64
	for _, s := range ids {
		if s != id {
			out = append(out, s)
		}
	}
	return out
}

func progressText(done, total uint64) string {
	if total == 0 {
		return fmt.Sprintf("%s done", sizeText(done))
	}
	return fmt.Sprintf("%d%% (%s of %s)", done*100/total, sizeText(done), sizeText(total))
}

func sizeText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// SetRebuilder plugs in the memory servers' rebuild call (issue 16).
// Without one, a server that comes back with stale copies stays
// rebuilding (writes reach it, reads do not) and famd logs why.
func (c *Cluster) SetRebuilder(r Rebuilder) {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	c.health.rebuilder = r
}

// SetRegionSource tells the Cluster how to list every region of the
// instance (famd's Server does it), so that it knows which regions are
// redundant and where their copies are.
func (c *Cluster) SetRegionSource(fn func() ([]metadata.Region, error)) {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	c.health.regions = fn
}

// OnServerState subscribes fn to every memory server state change; fn
// runs under the Cluster's membership lock, in the order of the changes,
// and must not call back into the Cluster.
func (c *Cluster) OnServerState(fn func(id uint64, st pb.ServerState)) {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	c.health.subs = append(c.health.subs, fn)
}

// ServerState returns what famd knows of memory server id.
func (c *Cluster) ServerState(id uint64) pb.ServerState {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	if sh := c.health.servers[id]; sh != nil {
		return sh.state
	}
	return pb.ServerState_SERVER_UP
}

// IsDown reports whether famd declared memory server id down (the
// redundant data path routes around it; placement may skip it).
func (c *Cluster) IsDown(id uint64) bool { return c.ServerState(id) == pb.ServerState_SERVER_DOWN }

// serverStates returns the state of every member, by id (a new session's
// first events).
func (c *Cluster) serverStates() ([]uint64, []pb.ServerState) {
	c.mu.Lock()
	ids := c.idsLocked()
	c.mu.Unlock()
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	sts := make([]pb.ServerState, len(ids))
	for i, id := range ids {
		if sh := h.servers[id]; sh != nil {
			sts[i] = sh.state
		}
	}
	return ids, sts
}

// describeServer fills si's membership fields.
func (c *Cluster) describeServer(si *pb.ServerInfo) {
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	id := si.GetId()
	if sh := h.servers[id]; sh != nil {
		si.State, si.StateSinceNs, si.FailedProbes, si.LastError = sh.state, sh.since.UnixNano(), uint32(sh.fails), sh.lastErr
	}
	for _, k := range h.staleLocked(id) {
		c := h.copies[k]
		si.StaleRegions++
		si.RebuildDone += c.Watermark
		si.RebuildTotal += c.Total
	}
}

// describeRegion fills ri's redundancy fields from famd's records.
func (c *Cluster) describeRegion(ri *pb.RegionInfo) {
	red := core.Redundancy(ri.GetAttr().GetRedundancy())
	if red != core.RAID1 && red != core.RAID5 {
		return
	}
	h := c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ri.GetServers() {
		cp := h.copies[copyKey{ri.GetId(), id}]
		if cp == nil {
			continue
		}
		ri.StaleServers = append(ri.StaleServers, id)
		ri.RebuildDone += cp.Watermark
		ri.RebuildTotal += cp.Total
		st := pb.RegionRedundancyState_REGION_REDUNDANCY_REBUILDING
		if sh := h.servers[id]; cp.State == copyStale || sh == nil || sh.state != pb.ServerState_SERVER_REBUILDING {
			st = pb.RegionRedundancyState_REGION_REDUNDANCY_DEGRADED
		}
		// Degraded outranks rebuilding: a copy is still missing.
		if st == pb.RegionRedundancyState_REGION_REDUNDANCY_DEGRADED || ri.RedundancyState == pb.RegionRedundancyState_REGION_REDUNDANCY_OK {
			ri.RedundancyState = st
		}
	}
}
