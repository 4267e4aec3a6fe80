package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gofam/openfam/core"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Attribute values (openfam.h enums) famctl sets or names.
const (
	memVolatile       = 1
	memPersistent     = 2
	interleaveDisable = 2
	permDataItem      = 2
)

// regionJSON is a region in --json output.
type regionJSON struct {
	ID             uint64   `json:"id"`
	Name           string   `json:"name"`
	Size           uint64   `json:"size"`
	Used           uint64   `json:"used"`
	Mode           string   `json:"mode"` // octal, "0600"
	UID            uint32   `json:"uid"`
	GID            uint32   `json:"gid"`
	Owner          string   `json:"owner"` // user:group names where known
	Memory         string   `json:"memory"`
	Redundancy     string   `json:"redundancy"`
	Interleave     string   `json:"interleave"`
	InterleaveSize uint64   `json:"interleave_size"`
	PermLevel      string   `json:"perm_level"`
	Servers        []uint64 `json:"servers"`      // ids of the memory servers holding it
	ServerCount    int      `json:"server_count"` // len(servers)
	regionRedundancyJSON
}

// itemJSON is an item in --json output.
type itemJSON struct {
	Region         string   `json:"region"`
	RegionID       uint64   `json:"region_id"`
	Offset         uint64   `json:"offset"`
	Name           string   `json:"name"`
	Size           uint64   `json:"size"`
	Mode           string   `json:"mode"`
	UID            uint32   `json:"uid"`
	GID            uint32   `json:"gid"`
	Owner          string   `json:"owner"`
	Rights         string   `json:"rights,omitempty"` // the caller's: "r", "rw"; absent in listings
	InterleaveSize uint64   `json:"interleave_size"`
	Servers        []uint64 `json:"servers"`      // ids of the memory servers holding it
	ServerCount    int      `json:"server_count"` // len(servers)
}

// serverJSON is a server in --json output.
type serverJSON struct {
	ID            uint32 `json:"id"`
	Hostname      string `json:"hostname"`
	Version       string `json:"version"`
	ServerVersion string `json:"server_version"`
	Control       string `json:"control"`
	DataTCP       string `json:"data_tcp"`
	DataUnix      string `json:"data_unix"`
	DataDir       string `json:"data_dir"`
	UptimeNs      uint64 `json:"uptime_ns"`
	Regions       uint64 `json:"regions"`
	BytesTotal    uint64 `json:"bytes_total"`
	BytesUsed     uint64 `json:"bytes_used"`
	// Persist is famd's persistence policy; ClientPersist the policy a
	// program started from this environment gets ($OPENFAM_PERSIST).
	Persist       string `json:"persist"`
	ClientPersist string `json:"client_persist"`
	// Provider and FabricAddr are famd's own data plane (issue 15).
	Provider   string `json:"provider"`
	FabricAddr string `json:"fabric_addr"`
}

// memoryServerJSON is a memory server in --json output.
type memoryServerJSON struct {
	ID        uint64 `json:"id"`
	Hostname  string `json:"hostname"`
	Control   string `json:"control"`
	DataTCP   string `json:"data_tcp"`
	DataUnix  string `json:"data_unix"`
	Reachable bool   `json:"reachable"`
	Segments  uint64 `json:"segments"`
	Bytes     uint64 `json:"bytes"`
	// Provider is the data-plane provider ("tcp": the project's own
	// protocol) and FabricAddr its libfabric address in hex ("" for tcp).
	Provider   string `json:"provider"`
	FabricAddr string `json:"fabric_addr"`
	serverHealthJSON
}

func toMemoryServerJSON(m *pb.ServerInfo) memoryServerJSON {
	return memoryServerJSON{ID: m.GetId(), Hostname: m.GetHostname(), Control: m.GetControl(), DataTCP: m.GetDataTcp(),
		DataUnix: m.GetDataUnix(), Reachable: m.GetReachable(), Segments: m.GetSegments(), Bytes: m.GetBytes(),
		Provider: providerName(m.GetProvider()), FabricAddr: hex.EncodeToString(m.GetFabricAddr()),
		serverHealthJSON: toServerHealthJSON(m)}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func toRegionJSON(r *pb.RegionInfo) regionJSON {
	a := r.GetAttr()
	return regionJSON{
		ID: r.GetId(), Name: r.GetName(), Size: r.GetSize(), Used: r.GetUsed(),
		Mode: fmtMode(r.GetMode()), UID: r.GetUid(), GID: r.GetGid(), Owner: owner(r.GetUid(), r.GetGid()),
		Memory: memoryName(a.GetMemory()), Redundancy: enumName(a.GetRedundancy(), "default", "none", "raid1", "raid5"),
		Interleave:     enumName(a.GetInterleave(), "default", "enable", "disable"),
		InterleaveSize: interleaveSize(r.GetInterleaveSize()),
		PermLevel:      enumName(a.GetPermLevel(), "default", "region", "data_item"),
		Servers:        nonNil(r.GetServers()), ServerCount: len(r.GetServers()),
		regionRedundancyJSON: toRegionRedundancyJSON(r),
	}
}

func toItemJSON(it *pb.ItemInfo, region string) itemJSON {
	return itemJSON{
		Region: region, RegionID: it.GetRegionId(), Offset: it.GetOffset(), Name: it.GetName(),
		Size: it.GetSize(), Mode: fmtMode(it.GetMode()), UID: it.GetUid(), GID: it.GetGid(),
		Owner: owner(it.GetUid(), it.GetGid()), Rights: rightsText(it.GetRights()),
		InterleaveSize: interleaveSize(it.GetInterleaveSize()), Servers: nonNil(it.GetServers()),
		ServerCount: len(it.GetServers()),
	}
}

func toServerJSON(r *pb.InfoReply, control string) serverJSON {
	return serverJSON{
		ID: r.GetServerId(), Hostname: r.GetHostname(), Version: r.GetVersion(), ServerVersion: r.GetServerVersion(),
		Control: control, DataTCP: r.GetDataTcp(), DataUnix: r.GetDataUnix(), DataDir: r.GetDataDir(),
		UptimeNs: r.GetUptimeNs(), Regions: r.GetRegions(), BytesTotal: r.GetBytesTotal(), BytesUsed: r.GetBytesUsed(),
		Persist: r.GetPersist(), ClientPersist: clientPersist(),
		Provider: providerName(r.GetProvider()), FabricAddr: hex.EncodeToString(r.GetFabricAddr()),
	}
}

// nonNil keeps JSON arrays arrays ([] rather than null).
func nonNil(v []uint64) []uint64 {
	if v == nil {
		return []uint64{}
	}
	return v
}

func enumName(v uint32, names ...string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return strconv.FormatUint(uint64(v), 10)
}

func memoryName(v uint32) string { return enumName(v, "default", "volatile", "persistent") }

// rightsText spells the caller's rights bits (1 read, 2 write).
func rightsText(r uint32) string {
	s := ""
	if r&1 != 0 {
		s += "r"
	}
	if r&2 != 0 {
		s += "w"
	}
	return s
}

// interleaveText is the INTERLEAVE column and stat line: off when the
// region was created with interleaving disabled, else on. The block size
// is a column of its own (BLOCK), so that no cell mixes the two.
func interleaveText(r *pb.RegionInfo) string {
	if r.GetAttr().GetInterleave() == interleaveDisable {
		return "off"
	}
	return "on"
}

// interleaveSize is the interleave size famctl prints, in tables and in
// JSON alike: what fam_stat reports. A famd that reports 0 (one that
// predates recording a block size, or a Servers reply without a cluster)
// means the default, which is also what fam_stat gives a program for it.
func interleaveSize(n uint64) uint64 {
	if n == 0 {
		return core.DefaultInterleaveSize
	}
	return n
}

// regionsHelp describes the columns of 'famctl regions'.
const regionsHelp = "Columns: ID, NAME, SIZE, USED (bytes allocated to items), MODE, OWNER,\n" +
	"TYPE (memory type), INTERLEAVE (on or off), BLOCK (the interleave size\n" +
	"fam_stat reports, --json interleave_size), NSERVERS (how many servers\n" +
	"hold the region's bytes, --json server_count), SERVER_IDS (their ids,\n" +
	"comma separated, --json servers; 0 is the famd itself), REDUNDANCY (- for\n" +
	"a region without redundancy; ok, degraded while a copy is on a server\n" +
	"that is down or not rebuilt, rebuilding(N%) while it is rebuilt; --json\n" +
	"redundancy_state, stale_servers, rebuild_done, rebuild_total and\n" +
	"rebuild_percent).\n"

// regionColumns and regionRow are the table form of a region.
var regionColumns = []string{"ID", "NAME", "SIZE", "USED", "MODE", "OWNER", "TYPE", "INTERLEAVE", "BLOCK", "NSERVERS", "SERVER_IDS", "REDUNDANCY"}

func regionRow(r *pb.RegionInfo) []any {
	return []any{r.GetId(), r.GetName(), fmtSize(r.GetSize()), fmtSize(r.GetUsed()), fmtMode(r.GetMode()),
		owner(r.GetUid(), r.GetGid()), memoryName(r.GetAttr().GetMemory()), interleaveText(r),
		fmtSize(interleaveSize(r.GetInterleaveSize())), len(r.GetServers()), fmtIDs(r.GetServers()), regionStateCell(r)}
}

func fmtMode(m uint32) string { return fmt.Sprintf("%04o", m) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fmtSize prints a byte count with a binary suffix: exact when it divides
// (64M), else to one decimal (1.5M).
func fmtSize(n uint64) string {
	units := []string{"T", "G", "M", "K"}
	for i, u := range units {
		div := uint64(1) << (10 * (len(units) - i))
		if n >= div {
			if n%div == 0 {
				return fmt.Sprintf("%d%s", n/div, u)
			}
			return fmt.Sprintf("%.1f%s", float64(n)/float64(div), u)
		}
	}
	return strconv.FormatUint(n, 10)
}

// sizeWithBytes is fmtSize plus the exact count where they differ.
func sizeWithBytes(n uint64) string {
	h := fmtSize(n)
	if h == strconv.FormatUint(n, 10) {
		return h
	}
	return fmt.Sprintf("%s (%d bytes)", h, n)
}

func fmtIDs(ids []uint64) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ",")
}

func fmtUptime(ns uint64) string {
	return (time.Duration(ns) / time.Second * time.Second).String()
}

func percent(used, size uint64) string {
	if size == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(used)/float64(size))
}

var (
	namesMu sync.Mutex
	names   = map[string]string{}
)

// owner prints uid:gid as user:group names where this host knows them.
func owner(uid, gid uint32) string {
	namesMu.Lock()
	defer namesMu.Unlock()
	lookup := func(key string, find func() (string, error)) string {
		if n, ok := names[key]; ok {
			return n
		}
		n, err := find()
		if err != nil {
			n = key[2:]
		}
		names[key] = n
		return n
	}
	u := strconv.FormatUint(uint64(uid), 10)
	g := strconv.FormatUint(uint64(gid), 10)
	un := lookup("u:"+u, func() (string, error) {
		x, err := user.LookupId(u)
		if err != nil {
			return "", err
		}
		return x.Username, nil
	})
	gn := lookup("g:"+g, func() (string, error) {
		x, err := user.LookupGroupId(g)
		if err != nil {
			return "", err
		}
		return x.Name, nil
	})
	return un + ":" + gn
}

// table writes aligned columns.
type table struct{ w *tabwriter.Writer }

func newTable(out io.Writer, header ...string) *table {
	t := &table{tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)}
	t.row(toAny(header)...)
	return t
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i, x := range s {
		a[i] = x
	}
	return a
}

func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.w, strings.Join(s, "\t"))
}

func (t *table) flush() error { return t.w.Flush() }

// keyValues prints one "key  value" line per pair, keys aligned.
func keyValues(out io.Writer, kv [][2]string) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, p := range kv {
		fmt.Fprintf(w, "%s\t%s\n", p[0], p[1])
	}
	return w.Flush()
}
