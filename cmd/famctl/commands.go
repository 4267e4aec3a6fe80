package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/internal/bytesize"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// command is one famctl subcommand.
type command struct {
	name    string
	args    string // argument synopsis
	summary string
	help    string // extra text for 'famctl help NAME'
	min     int    // positional arguments
	max     int
	// flags registers the command's own options; nil when it has none.
	flags func(fs *flag.FlagSet, o *cmdOpts)
	run   func(s *session, o *cmdOpts, args []string) error
	// local, when set, runs the command on this host without a famd
	// (famctl token new); run is then unused.
	local func(g *globals, o *cmdOpts, args []string, stdout io.Writer) error
}

// cmdOpts are the options of the commands that take any.
type cmdOpts struct {
	mode         string
	persistent   bool
	volatile     bool
	noInterleave bool
	itemPerms    bool
	force        bool // token new: replace an existing file
	yes          bool // destroy-region, backups delete: do not ask
}

var commands []*command

func init() {
	commands = []*command{
		{name: "regions", summary: "list the regions", max: 0, run: cmdRegions,
			help: regionsHelp},
		{name: "items", args: "REGION", summary: "list the items of a region", min: 1, max: 1, run: cmdItems,
			help: "Columns: OFFSET (the item's offset in the region: its global descriptor),\nSIZE, NAME (- when unnamed), MODE, OWNER.\n"},
		{name: "stat", args: "REGION [ITEM]", summary: "show everything known about a region or an item", min: 1, max: 2, run: cmdStat},
		{name: "create-region", args: "NAME SIZE", summary: "create a region", min: 2, max: 2, run: cmdCreateRegion,
			flags: func(fs *flag.FlagSet, o *cmdOpts) {
				fs.StringVar(&o.mode, "mode", "0600", "")
				fs.BoolVar(&o.persistent, "persistent", false, "")
				fs.BoolVar(&o.volatile, "volatile", false, "")
				fs.BoolVar(&o.noInterleave, "no-interleave", false, "")
				fs.BoolVar(&o.itemPerms, "item-permissions", false, "")
			},
			help: "Options:\n  --mode MODE        permissions, octal (default 0600)\n" +
				"  --persistent       keep the region's bytes on disk (survive reboots)\n" +
				"  --volatile         keep them on tmpfs (survive processes, not reboots)\n" +
				"                     (neither: the server's default memory type)\n" +
				"  --no-interleave    do not stripe items over memory servers\n" +
				"  --item-permissions each item's own mode governs it (default: the\n" +
				"                     region's mode governs every item, as in OpenFAM)\n"},
		{name: "destroy-region", args: "NAME", summary: "destroy a region and every item in it", min: 1, max: 1, run: cmdDestroyRegion, flags: yesFlag, help: confirmHelp},
		{name: "chmod", args: "REGION [ITEM] MODE", summary: "change the permissions of a region or an item", min: 2, max: 3, run: cmdChmod,
			help: "Changing an item's permissions revokes the data-plane keys clients hold\nfor it; they re-open the item with the new rights.\n"},
		{name: "servers", summary: "show the famd and the memory servers that joined it", max: 0, run: cmdServers,
			help: "First the famd itself: version, addresses, data directory, uptime,\nregions, the block size of interleaved regions, and the persistence\npolicy (OPENFAM_PERSIST) of the famd and of programs started from this\nenvironment. Then its memory\nservers (famd --role memory) as a table: ID, HOST, DATA (data-plane TCP\naddress), SOCKET (data-plane Unix socket for clients on HOST, - if none),\nREACHABLE (answered the famd just now), SEGMENTS (regions with bytes on\nit), BYTES (their size), STATE: up, suspect (a probe failed or a\nclient reported it), down (declared down: clients route around it) or\nrebuilding(N%) (back, its copies of redundant regions being rebuilt),\nPROVIDER (the data plane: tcp, the project's own protocol, or the\nlibfabric provider of famd --provider) and FABRIC ADDR (its libfabric\naddress in hex, - for tcp). The famd's own data plane is shown the same\nway.\n\nWith --json: {\"servers\": [the famd, with \"provider\" and \"fabric_addr\"],\n\"interleave_size\": N, \"memory_servers\": [{\"id\", \"hostname\", \"control\",\n\"data_tcp\", \"data_unix\", \"reachable\", \"segments\", \"bytes\",\n\"provider\", \"fabric_addr\", \"state\", \"state_since\", \"failed_probes\",\n\"last_error\", \"stale_regions\", \"rebuild_done\", \"rebuild_total\",\n\"rebuild_percent\"}, ...], \"redundancy\": {\"state\": ok, degraded or\nrebuilding, \"degraded_regions\": [names], \"rebuilding_regions\": [names]}}.\n"},
		{name: "usage", summary: "bytes total and used, per region and in all", max: 0, run: cmdUsage},
		tokenCommand,
		backupsCommand,
		completionCommand,
		pingCommand,
	}
}

func findCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// commandList is the command summary for the top-level help.
func commandList() string {
	var b strings.Builder
	for _, c := range commands {
		syn := strings.TrimSpace(c.name + " " + c.args)
		fmt.Fprintf(&b, "  %-26s %s\n", syn, c.summary)
	}
	return b.String()
}

// usage is the command's own help text.
func (c *command) usage() string {
	s := fmt.Sprintf("Usage: famctl [global options] %s\n\n%s.\n", strings.TrimSpace(c.name+" "+c.args), upperFirst(c.summary))
	if c.help != "" {
		s += "\n" + c.help
	}
	return s + "\nGlobal options: --server ADDR, --token-file F, --timeout DUR, --json,\n--data-dir DIR, --shm-dir DIR (see 'famctl --help').\n"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parse reads the command's arguments, letting options and positional
// arguments come in any order (famctl chmod r 0644 --json); everything after
// "--" is positional. It reports help=true for -h/--help.
func (c *command) parse(g *globals, args []string) (pos []string, o *cmdOpts, help bool, err error) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	o = &cmdOpts{}
	if c.flags != nil {
		c.flags(fs, o)
	}
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, true, nil
			}
			return nil, nil, false, usagef("%s: %v", c.name, err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	pos = append(pos, tail...)
	if len(pos) < c.min || len(pos) > c.max {
		want := "no arguments"
		if c.args != "" {
			want = "arguments " + c.args
		}
		return nil, nil, false, usagef("%s: want %s, got %d", c.name, want, len(pos))
	}
	return pos, o, false, nil
}

// execute connects and runs the command.
func (c *command) execute(g *globals, o *cmdOpts, args []string, stdout io.Writer) error {
	if c.name == "create-region" {
		// Bad arguments are usage errors, found before any connection.
		if _, err := parseSize(args[1]); err != nil {
			return err
		}
		if _, err := parseMode(o.mode); err != nil {
			return err
		}
		if o.persistent && o.volatile {
			return usagef("create-region: --persistent and --volatile exclude each other")
		}
	}
	if c.name == "chmod" {
		if _, err := parseMode(args[len(args)-1]); err != nil {
			return err
		}
	}
	if c.local != nil {
		return c.local(g, o, args, stdout)
	}
	if g.dataDir != "" {
		if err := checkOffline(c, args); err != nil {
			return err
		}
	}
	s, err := dial(g)
	if err != nil {
		return err
	}
	defer s.close()
	s.stdout = stdout
	return c.run(s, o, args)
}

// parseMode reads an octal permission mode (0600, 644, 0o755).
func parseMode(s string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O")
	m, err := strconv.ParseUint(t, 8, 32)
	if err != nil || t == "" || m > 0o777 {
		return 0, usagef("bad mode %q: want octal permission bits such as 0600", s)
	}
	return uint32(m), nil
}

// parseSize reads a byte count with an optional K, M, G or T suffix (powers
// of 1024; "KiB" and "KB" are accepted as K).
func parseSize(s string) (uint64, error) {
	v, err := bytesize.Parse(s)
	if err != nil {
		return 0, usagef("bad size %q: want a positive number of bytes, optionally with K, M, G or T", s)
	}
	return v, nil
}

// resolveRegion finds a region by name, else (when ref is a number that
// names no region) by id.
func (s *session) resolveRegion(ref string) (*pb.RegionInfo, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.LookupRegion(ctx, &pb.LookupRegionRequest{Name: ref})
	if err != nil {
		return nil, s.transport(err)
	}
	ferr := check(r.GetErr())
	if ferr == nil {
		return r.GetRegion(), nil
	}
	var fe *famError
	id, perr := strconv.ParseUint(ref, 10, 64)
	if perr != nil || !errors.As(ferr, &fe) || core.Code(fe.code) != core.CodeNotFound {
		return nil, ferr
	}
	r, err = s.fam.RegionByID(ctx, &pb.RegionByIDRequest{Id: id})
	if err != nil {
		return nil, s.transport(err)
	}
	if check(r.GetErr()) != nil {
		return nil, ferr // the name lookup's error says more
	}
	return r.GetRegion(), nil
}

// openItem looks an item up by name in a region and returns its
// description and a function that releases the key famd issued.
func (s *session) openItem(region, item string) (*pb.ItemInfo, func(), error) {
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.Lookup(ctx, &pb.LookupRequest{Item: item, Region: region})
	if err != nil {
		return nil, nil, s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return nil, nil, err
	}
	key := r.GetItem().GetKey()
	release := func() {
		ctx, cancel := s.ctx()
		defer cancel()
		// A key revoked by chmod is already gone at famd; nothing to undo.
		_, _ = s.fam.CloseItem(ctx, &pb.KeyRequest{Key: key})
	}
	return r.GetItem(), release, nil
}

// transport wraps a gRPC error: the call did not reach a working famd.
func (s *session) transport(err error) error {
	return fmt.Errorf("famd at %s: %w", s.addr, err)
}

func cmdRegions(s *session, _ *cmdOpts, _ []string) error {
	regions, err := s.listRegions()
	if err != nil {
		return err
	}
	if s.g.json {
		out := make([]regionJSON, len(regions))
		for i, r := range regions {
			out[i] = toRegionJSON(r)
		}
		return s.emit(map[string]any{"regions": out})
	}
	t := newTable(s.stdout, regionColumns...)
	for _, r := range regions {
		t.row(regionRow(r)...)
	}
	return t.flush()
}

func (s *session) listRegions() ([]*pb.RegionInfo, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.ListRegions(ctx, &pb.ListRegionsRequest{})
	if err != nil {
		return nil, s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return nil, err
	}
	return r.GetRegions(), nil
}

func cmdItems(s *session, _ *cmdOpts, args []string) error {
	reg, err := s.resolveRegion(args[0])
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.ListItems(ctx, &pb.ListItemsRequest{RegionId: reg.GetId()})
	if err != nil {
		return s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return err
	}
	if s.g.json {
		out := make([]itemJSON, len(r.GetItems()))
		for i, it := range r.GetItems() {
			out[i] = toItemJSON(it, reg.GetName())
		}
		return s.emit(map[string]any{"region": reg.GetName(), "region_id": reg.GetId(), "items": out})
	}
	t := newTable(s.stdout, "OFFSET", "SIZE", "NAME", "MODE", "OWNER")
	for _, it := range r.GetItems() {
		t.row(it.GetOffset(), fmtSize(it.GetSize()), orDash(it.GetName()), fmtMode(it.GetMode()), owner(it.GetUid(), it.GetGid()))
	}
	return t.flush()
}

func cmdStat(s *session, _ *cmdOpts, args []string) error {
	reg, err := s.resolveRegion(args[0])
	if err != nil {
		return err
	}
	if len(args) == 1 {
		return s.showRegion(reg)
	}
	it, release, err := s.openItem(reg.GetName(), args[1])
	if err != nil {
		return err
	}
	defer release()
	return s.showItem(it, reg.GetName())
}

func (s *session) showRegion(r *pb.RegionInfo) error {
	if s.g.json {
		return s.emit(toRegionJSON(r))
	}
	j := toRegionJSON(r)
	return keyValues(s.stdout, [][2]string{
		{"region", j.Name}, {"id", fmt.Sprint(j.ID)},
		{"size", sizeWithBytes(j.Size)}, {"used", sizeWithBytes(j.Used)},
		{"mode", j.Mode}, {"owner", owner(j.UID, j.GID)},
		{"memory", j.Memory}, {"redundancy", j.Redundancy},
		{"interleave", interleaveText(r)}, {"interleave size", sizeWithBytes(j.InterleaveSize)},
		{"permission level", j.PermLevel},
		{"server count", fmt.Sprint(j.ServerCount)}, {"server ids", fmtIDs(j.Servers)},
	})
}

func (s *session) showItem(it *pb.ItemInfo, region string) error {
	j := toItemJSON(it, region)
	if s.g.json {
		return s.emit(j)
	}
	return keyValues(s.stdout, [][2]string{
		{"item", orDash(j.Name)}, {"region", fmt.Sprintf("%s (id %d)", region, j.RegionID)},
		{"offset", fmt.Sprint(j.Offset)}, {"size", sizeWithBytes(j.Size)},
		{"mode", j.Mode}, {"owner", owner(j.UID, j.GID)},
		{"your rights", orDash(j.Rights)},
		{"interleave size", sizeWithBytes(j.InterleaveSize)},
		{"server count", fmt.Sprint(j.ServerCount)}, {"server ids", fmtIDs(j.Servers)},
	})
}

func cmdCreateRegion(s *session, o *cmdOpts, args []string) error {
	size, _ := parseSize(args[1])
	mode, _ := parseMode(o.mode)
	attr := &pb.RegionAttr{}
	switch {
	case o.persistent:
		attr.Memory = memPersistent
	case o.volatile:
		attr.Memory = memVolatile
	}
	if o.noInterleave {
		attr.Interleave = interleaveDisable
	}
	if o.itemPerms {
		attr.PermLevel = permDataItem
	}
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.CreateRegion(ctx, &pb.CreateRegionRequest{Name: args[0], Size: size, Mode: mode, Attr: attr})
	if err != nil {
		return s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return err
	}
	if s.g.json {
		return s.emit(toRegionJSON(r.GetRegion()))
	}
	fmt.Fprintf(s.stdout, "created region %s (id %d, %s)\n", r.GetRegion().GetName(), r.GetRegion().GetId(), sizeWithBytes(r.GetRegion().GetSize()))
	return nil
}

func cmdDestroyRegion(s *session, o *cmdOpts, args []string) error {
	reg, err := s.resolveRegion(args[0])
	if err != nil {
		return err
	}
	if err := confirm(o, "destroy-region", fmt.Sprintf("region %s (id %d, %s used of %s) and every item in it",
		reg.GetName(), reg.GetId(), fmtSize(reg.GetUsed()), fmtSize(reg.GetSize()))); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.DestroyRegion(ctx, &pb.RegionByIDRequest{Id: reg.GetId()})
	if err != nil {
		return s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return err
	}
	if s.g.json {
		return s.emit(map[string]any{"destroyed": toRegionJSON(reg)})
	}
	fmt.Fprintf(s.stdout, "destroyed region %s (id %d)\n", reg.GetName(), reg.GetId())
	return nil
}

func cmdChmod(s *session, _ *cmdOpts, args []string) error {
	mode, _ := parseMode(args[len(args)-1])
	reg, err := s.resolveRegion(args[0])
	if err != nil {
		return err
	}
	if len(args) == 2 {
		ctx, cancel := s.ctx()
		defer cancel()
		r, err := s.fam.ChangeRegionPermissions(ctx, &pb.ChangeRegionPermissionsRequest{Id: reg.GetId(), Mode: mode})
		if err != nil {
			return s.transport(err)
		}
		if err := check(r.GetErr()); err != nil {
			return err
		}
		after, err := s.resolveRegion(strconv.FormatUint(reg.GetId(), 10))
		if err != nil {
			return err
		}
		if s.g.json {
			return s.emit(toRegionJSON(after))
		}
		fmt.Fprintf(s.stdout, "region %s: mode %s -> %s\n", reg.GetName(), fmtMode(reg.GetMode()), fmtMode(after.GetMode()))
		return nil
	}
	it, release, err := s.openItem(reg.GetName(), args[1])
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.ChangeItemPermissions(ctx, &pb.ChangeItemPermissionsRequest{Key: it.GetKey(), Mode: mode})
	if err != nil {
		return s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return err
	}
	// The change revoked the key; a fresh lookup shows the item as it is now.
	after, release2, err := s.openItem(reg.GetName(), args[1])
	if err != nil {
		return err
	}
	defer release2()
	if s.g.json {
		return s.emit(toItemJSON(after, reg.GetName()))
	}
	fmt.Fprintf(s.stdout, "item %s in region %s: mode %s -> %s\n", args[1], reg.GetName(), fmtMode(it.GetMode()), fmtMode(after.GetMode()))
	return nil
}

func cmdServers(s *session, _ *cmdOpts, _ []string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return err
	}
	ms, err := s.fam.Servers(ctx, &pb.ServersRequest{Probe: true})
	if err != nil {
		return s.transport(err)
	}
	if err := check(ms.GetErr()); err != nil {
		return err
	}
	j := toServerJSON(r, s.addr)
	mem := make([]memoryServerJSON, len(ms.GetServers()))
	for i, m := range ms.GetServers() {
		mem[i] = toMemoryServerJSON(m)
	}
	if s.g.json {
		out := map[string]any{"servers": []serverJSON{j}, "interleave_size": interleaveSize(ms.GetInterleaveSize()),
			"memory_servers": mem}
		if len(mem) > 0 {
			// The regions' side of the servers' states (issue 16); a
			// listing that fails leaves it out rather than the servers.
			if regions, err := s.listRegions(); err == nil {
				out["redundancy"] = summarize(regions)
			}
		}
		return s.emit(out)
	}
	if err := keyValues(s.stdout, [][2]string{
		{"server", fmt.Sprintf("%d on %s", j.ID, orDash(j.Hostname))},
		{"version", fmt.Sprintf("OpenFAM %s, famd %s", j.Version, orDash(j.ServerVersion))},
		{"control", j.Control}, {"data (tcp)", orDash(j.DataTCP)}, {"data (unix)", orDash(j.DataUnix)},
		{"data dir", orDash(j.DataDir)}, {"uptime", fmtUptime(j.UptimeNs)},
		{"regions", fmt.Sprint(j.Regions)},
		{"bytes", fmt.Sprintf("%s used of %s", fmtSize(j.BytesUsed), fmtSize(j.BytesTotal))},
		{"interleave size", sizeWithBytes(interleaveSize(ms.GetInterleaveSize()))},
		{"memory servers", fmt.Sprint(len(mem))},
		{"persistence", fmt.Sprintf("famd %s; programs here %s", orDash(j.Persist), j.ClientPersist)},
		{"data plane", fabricLine(j.Provider, j.FabricAddr)},
	}); err != nil {
		return err
	}
	if len(mem) == 0 {
		return nil
	}
	fmt.Fprintln(s.stdout)
	t := newTable(s.stdout, "ID", "HOST", "DATA", "SOCKET", "REACHABLE", "SEGMENTS", "BYTES", "STATE", "PROVIDER", "FABRIC ADDR")
	for i, m := range mem {
		t.row(m.ID, orDash(m.Hostname), orDash(m.DataTCP), orDash(m.DataUnix), yesNo(m.Reachable), m.Segments, fmtSize(m.Bytes),
			serverStateCell(ms.GetServers()[i]), m.Provider, orDash(m.FabricAddr))
	}
	return t.flush()
}

func cmdUsage(s *session, _ *cmdOpts, _ []string) error {
	regions, err := s.listRegions()
	if err != nil {
		return err
	}
	type regionUsage struct {
		ID   uint64 `json:"id"`
		Name string `json:"name"`
		Size uint64 `json:"size"`
		Used uint64 `json:"used"`
	}
	out := make([]regionUsage, len(regions))
	var size, used uint64
	for i, r := range regions {
		out[i] = regionUsage{r.GetId(), r.GetName(), r.GetSize(), r.GetUsed()}
		size += r.GetSize()
		used += r.GetUsed()
	}
	if s.g.json {
		return s.emit(map[string]any{
			"regions": out,
			"total":   map[string]uint64{"regions": uint64(len(regions)), "size": size, "used": used},
		})
	}
	t := newTable(s.stdout, "ID", "NAME", "SIZE", "USED", "USE%")
	for _, r := range out {
		t.row(r.ID, r.Name, fmtSize(r.Size), fmtSize(r.Used), percent(r.Used, r.Size))
	}
	t.row("", "total", fmtSize(size), fmtSize(used), percent(used, size))
	return t.flush()
}
