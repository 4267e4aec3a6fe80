package main

import (
	"fmt"
	"strings"
	"time"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// The membership and redundancy state famctl shows (issue 16): each
// memory server's state (up, suspect, down, rebuilding) with its rebuild
// progress, and each redundant region's state (ok, degraded, rebuilding).

// serverHealthJSON is the membership part of a memory server in
// `servers --json` (flattened into memoryServerJSON).
type serverHealthJSON struct {
	// State is "up", "suspect", "down" or "rebuilding".
	State string `json:"state"`
	// StateSince is when it entered State (RFC 3339, UTC; "" unknown).
	StateSince   string `json:"state_since"`
	FailedProbes uint32 `json:"failed_probes"`
	LastError    string `json:"last_error"`
	// StaleRegions counts the redundant regions whose copy on it is not
	// current; RebuildDone and RebuildTotal sum their rebuild progress in
	// bytes, RebuildPercent is that as a percentage (100 when nothing is
	// to rebuild).
	StaleRegions   uint32  `json:"stale_regions"`
	RebuildDone    uint64  `json:"rebuild_done"`
	RebuildTotal   uint64  `json:"rebuild_total"`
	RebuildPercent float64 `json:"rebuild_percent"`
}

func toServerHealthJSON(m *pb.ServerInfo) serverHealthJSON {
	j := serverHealthJSON{State: serverStateName(m.GetState()), FailedProbes: m.GetFailedProbes(), LastError: m.GetLastError(),
		StaleRegions: m.GetStaleRegions(), RebuildDone: m.GetRebuildDone(), RebuildTotal: m.GetRebuildTotal(),
		RebuildPercent: rebuildPercent(m.GetRebuildDone(), m.GetRebuildTotal(), m.GetStaleRegions() == 0)}
	if ns := m.GetStateSinceNs(); ns != 0 {
		j.StateSince = time.Unix(0, ns).UTC().Format(time.RFC3339)
	}
	return j
}

// regionRedundancyJSON is the redundancy part of a region in --json
// output (flattened into regionJSON).
type regionRedundancyJSON struct {
	// RedundancyState is "ok", "degraded" (a copy is on a server that is
	// down or not rebuilt yet) or "rebuilding"; "ok" for regions
	// without redundancy.
	RedundancyState string   `json:"redundancy_state"`
	StaleServers    []uint64 `json:"stale_servers"`
	RebuildDone     uint64   `json:"rebuild_done"`
	RebuildTotal    uint64   `json:"rebuild_total"`
	RebuildPercent  float64  `json:"rebuild_percent"`
}

func toRegionRedundancyJSON(r *pb.RegionInfo) regionRedundancyJSON {
	return regionRedundancyJSON{RedundancyState: regionStateName(r.GetRedundancyState()), StaleServers: nonNil(r.GetStaleServers()),
		RebuildDone: r.GetRebuildDone(), RebuildTotal: r.GetRebuildTotal(),
		RebuildPercent: rebuildPercent(r.GetRebuildDone(), r.GetRebuildTotal(), len(r.GetStaleServers()) == 0)}
}

func serverStateName(st pb.ServerState) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "SERVER_"))
}

func regionStateName(st pb.RegionRedundancyState) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "REGION_REDUNDANCY_"))
}

// rebuildPercent is done of total in percent, one decimal; complete when there
// is nothing to do.
func rebuildPercent(done, total uint64, complete bool) float64 {
	if complete {
		return 100
	}
	if total == 0 {
		return 0
	}
	return float64(done*1000/total) / 10
}

// serverStateCell is the STATE column of a memory server: its state,
// with the rebuild's percentage while it rebuilds.
func serverStateCell(m *pb.ServerInfo) string {
	st := serverStateName(m.GetState())
	if m.GetState() == pb.ServerState_SERVER_REBUILDING {
		return fmt.Sprintf("%s(%s)", st, pctText(rebuildPercent(m.GetRebuildDone(), m.GetRebuildTotal(), m.GetStaleRegions() == 0)))
	}
	return st
}

// regionStateCell is the REDUNDANCY column of a region: "-" without
// redundancy, else its state with the rebuild's percentage while it
// rebuilds.
func regionStateCell(r *pb.RegionInfo) string {
	switch r.GetAttr().GetRedundancy() {
	case 2, 3: // RAID1, RAID5 (fam_redundancy_level_t)
	default:
		return "-"
	}
	st := regionStateName(r.GetRedundancyState())
	if r.GetRedundancyState() == pb.RegionRedundancyState_REGION_REDUNDANCY_REBUILDING {
		return fmt.Sprintf("%s(%s)", st, pctText(rebuildPercent(r.GetRebuildDone(), r.GetRebuildTotal(), false)))
	}
	return st
}

func pctText(p float64) string { return fmt.Sprintf("%.0f%%", p) }

// redundancySummary is the "redundancy" object of `servers --json`: the
// regions the caller may see that are degraded or being rebuilt, by name.
type redundancySummary struct {
	State      string   `json:"state"` // "ok", "degraded" or "rebuilding"
	Degraded   []string `json:"degraded_regions"`
	Rebuilding []string `json:"rebuilding_regions"`
}

func summarize(regions []*pb.RegionInfo) redundancySummary {
	s := redundancySummary{State: "ok", Degraded: []string{}, Rebuilding: []string{}}
	for _, r := range regions {
		switch r.GetRedundancyState() {
		case pb.RegionRedundancyState_REGION_REDUNDANCY_DEGRADED:
			s.Degraded = append(s.Degraded, r.GetName())
		case pb.RegionRedundancyState_REGION_REDUNDANCY_REBUILDING:
			s.Rebuilding = append(s.Rebuilding, r.GetName())
		}
	}
	switch {
	case len(s.Degraded) > 0:
		s.State = "degraded"
	case len(s.Rebuilding) > 0:
		s.State = "rebuilding"
	}
	return s
}
