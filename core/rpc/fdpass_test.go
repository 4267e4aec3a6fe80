package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Patterns the owner writes into its items; the other user's helper looks
// for them in whatever a passed descriptor lets it map.
const (
	secretX  = "SECRET-X-0600-only-root-may-read-this"
	publicY  = "PUBLIC-Y-0644-anyone-may-read-this"
	dropboxZ = "DROPBOX-Z-0622-others-may-only-write"
)

// TestDescriptorPassingReachesOnlyGrantedItems is the same-host access
// check of descriptor passing: a second Unix user who may read one item
// gets a descriptor that reaches no other owner's or mode's bytes, cannot
// be made writable (not even by reopening /proc/self/fd/N), and loses the
// item's bytes once the owner takes read access away; a write-only item
// yields no descriptor at all. Before heap files were split by access
// class the descriptor was the whole region file, opened read-write
// whenever the key had write.
func TestDescriptorPassingReachesOnlyGrantedItems(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	d, c := start(t, embed.Options{})
	if err := os.Chmod(dirOf(d.SocketPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	dc, err := transport.Dial("unix", d.DataSocketPath(), transport.ClientOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()

	reg := createRegion(t, c, "mixed", 1<<20, 0o777)
	put := func(name string, mode uint32, pattern string) {
		t.Helper()
		ir := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: reg.GetId(), Name: name, Size: 256, Mode: mode})).ok(t, "Allocate "+name)
		k, _ := keyFrom(ir.GetItem().GetKey())
		if err := dc.Put(k, 0, []byte(pattern)); err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	}
	// Allocated one after another, the three items share a page of the
	// region: only their heap files keep them apart.
	put("secret", 0o600, secretX)
	put("public", 0o644, publicY)
	put("dropbox", 0o622, dropboxZ)

	cmd := exec.Command(copyExecutable(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAMD_TEST_HELPER=fdpass", "FAMD_SOCK="+d.SocketPath(), "FAMD_DATA_SOCK="+d.DataSocketPath())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	var out []string
	// The helper checks what it was given, says "mapped", and waits for
	// the owner's chmod before checking its old mapping again.
	for lines.Scan() {
		out = append(out, lines.Text())
		if lines.Text() == "mapped" {
			break
		}
	}
	lk := check(c.Lookup(ctx(t), &pb.LookupRequest{Item: "public", Region: "mixed"})).ok(t, "Lookup public")
	k, _ := keyFrom(lk.GetItem().GetKey())
	check(c.ChangeItemPermissions(ctx(t), &pb.ChangeItemPermissionsRequest{Key: k[:], Mode: 0o600})).ok(t, "chmod public 0600")
	// The owner's own bytes survive the move to the new class's file.
	lk = check(c.Lookup(ctx(t), &pb.LookupRequest{Item: "public", Region: "mixed"})).ok(t, "Lookup public again")
	k, _ = keyFrom(lk.GetItem().GetKey())
	got := make([]byte, len(publicY))
	if err := dc.Get(k, 0, got); err != nil || string(got) != publicY {
		t.Fatalf("owner reads %q after chmod (err %v), want %q", got, err, publicY)
	}
	fmt.Fprintln(stdin, "go")
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	out = append(out, strings.Split(strings.TrimSpace(string(rest)), "\n")...)
	err = cmd.Wait()
	text := strings.Join(out, "\n")
	if err != nil || strings.Contains(text, "FAIL") {
		t.Fatalf("helper (uid 65534): %v\n%s\nstderr:\n%s", err, text, stderr.String())
	}
	for _, want := range []string{"public readable", "descriptor read-only", "no writable mapping", "no reopen for write",
		"no other items", "write-only: no descriptor", "write-only: data plane put", "revoked bytes gone",
		"ctl secret refused", "ctl public read-only descriptor", "ctl descriptor reaches public only", "ctl write-only: no descriptor"} {
		if !strings.Contains(text, "ok "+want) {
			t.Errorf("helper did not report %q:\n%s", want, text)
		}
	}
}

func keyFrom(b []byte) (transport.Key, bool) {
	var k transport.Key
	if len(b) != len(k) {
		return k, false
	}
	copy(k[:], b)
	return k, true
}

// fdpassHelper runs as uid 65534: it takes what famd passes for the items
// of TestDescriptorPassingReachesOnlyGrantedItems and tries to reach more.
// Every line is "ok ..." or "FAIL ...".
func fdpassHelper() int {
	conn, err := rpc.DialUnix(os.Getenv("FAMD_SOCK"), 10*time.Second)
	if err != nil {
		fmt.Println("FAIL dial:", err)
		return 1
	}
	defer conn.Close()
	c := pb.NewFamClient(conn)
	dc, err := transport.Dial("unix", os.Getenv("FAMD_DATA_SOCK"), transport.ClientOptions{Timeout: 20 * time.Second})
	if err != nil {
		fmt.Println("FAIL data dial:", err)
		return 1
	}
	defer dc.Close()
	cx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lookup := func(name string) (transport.Key, uint32) {
		r, err := c.Lookup(cx, &pb.LookupRequest{Item: name, Region: "mixed"})
		if err != nil || r.GetErr() != nil {
			fmt.Println("FAIL lookup", name, err, r.GetErr())
			return transport.Key{}, 0
		}
		k, _ := keyFrom(r.GetItem().GetKey())
		return k, r.GetItem().GetRights()
	}
	say := func(ok bool, what string, args ...any) {
		if ok {
			fmt.Println("ok " + what)
		} else {
			fmt.Println(append([]any{"FAIL " + what + ":"}, args...)...)
		}
	}
	if _, err := c.Lookup(cx, &pb.LookupRequest{Item: "secret", Region: "mixed"}); err == nil {
		// The permission check itself is not what this test is about,
		// but it must hold for the rest to mean anything.
		r, _ := c.Lookup(cx, &pb.LookupRequest{Item: "secret", Region: "mixed"})
		say(r.GetErr().GetCode() == int32(core.CodeNoPerm), "secret refused", r.GetErr())
	}

	k, rights := lookup("public")
	say(rights == uint32(core.RightRead), "public readable", "rights", rights)
	f, off, size, _, err := dc.OpenFD(k)
	if err != nil {
		fmt.Println("FAIL OpenFD public:", err)
		return 1
	}
	fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	say(fl&unix.O_ACCMODE == unix.O_RDONLY, "descriptor read-only", "flags", fl)
	st, _ := f.Stat()
	whole := int(st.Size())
	_, werr := unix.Mmap(int(f.Fd()), 0, whole, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	say(werr != nil, "no writable mapping", "a writable shared mapping of a read-only descriptor succeeded")
	rf, rerr := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDWR, 0)
	if rf != nil {
		rf.Close()
	}
	say(rerr != nil, "no reopen for write", "reopening /proc/self/fd for writing succeeded")
	m, err := unix.Mmap(int(f.Fd()), 0, whole, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		fmt.Println("FAIL mapping the passed descriptor:", err)
		return 1
	}
	say(bytes.Contains(m, []byte(publicY)) && bytes.Equal(m[off:off+uint64(len(publicY))], []byte(publicY)) && size == 256,
		"public bytes at the offset famd gave")
	say(!bytes.Contains(m, []byte(secretX)) && !bytes.Contains(m, []byte(dropboxZ)), "no other items",
		"the descriptor for 'public' also reaches another item's bytes")

	zk, zr := lookup("dropbox")
	_, _, _, _, zerr := dc.OpenFD(zk)
	say(zr == uint32(core.RightWrite) && zerr != nil, "write-only: no descriptor", "rights", zr, "OpenFD error", zerr)
	say(dc.Put(zk, 100, []byte("note")) == nil, "write-only: data plane put")

	// The same lookups as control calls on the data plane: the caller is
	// who the kernel says (uid 65534), checked as on the control plane,
	// and a descriptor comes only with a readable item, read-only.
	ctl := func(name string) (*pb.ItemReply, *os.File, uint8) {
		req, _ := proto.Marshal(&pb.LookupRequest{Item: name, Region: "mixed"})
		b, f, _, _, rights, err := dc.Control(transport.CtlLookup, 0, req)
		if err != nil {
			fmt.Println("FAIL control lookup", name, err)
			return nil, nil, 0
		}
		var rep pb.ItemReply
		if err := proto.Unmarshal(b, &rep); err != nil {
			fmt.Println("FAIL control reply", name, err)
		}
		return &rep, f, rights
	}
	rep, cf, _ := ctl("secret")
	say(rep.GetErr().GetCode() == int32(core.CodeNoPerm) && cf == nil, "ctl secret refused", rep.GetErr(), cf != nil)
	rep, cf, cr := ctl("public")
	if cf == nil {
		fmt.Println("FAIL ctl public: no descriptor")
		return 1
	}
	cfl, _ := unix.FcntlInt(cf.Fd(), unix.F_GETFL, 0)
	say(cfl&unix.O_ACCMODE == unix.O_RDONLY && cr == uint8(core.RightRead) && rep.GetItem().GetRights() == uint32(core.RightRead),
		"ctl public read-only descriptor", "flags", cfl, "rights", cr)
	cm, err := unix.Mmap(int(cf.Fd()), 0, whole, unix.PROT_READ, unix.MAP_SHARED)
	say(err == nil && bytes.Contains(cm, []byte(publicY)) && !bytes.Contains(cm, []byte(secretX)) && !bytes.Contains(cm, []byte(dropboxZ)),
		"ctl descriptor reaches public only", err)
	if err == nil {
		unix.Munmap(cm)
	}
	cf.Close()
	rep, cf, _ = ctl("dropbox")
	say(rep.GetItem().GetRights() == uint32(core.RightWrite) && cf == nil, "ctl write-only: no descriptor", cf != nil)

	fmt.Println("mapped")
	// The owner now changes 'public' to 0600; what this user still maps
	// must no longer show it.
	bufio.NewReader(os.Stdin).ReadString('\n')
	say(!bytes.Contains(m, []byte(publicY)), "revoked bytes gone", "the old descriptor still shows the item after chmod 0600")
	return 0
}
