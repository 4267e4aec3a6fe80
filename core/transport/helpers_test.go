package transport

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fileMem is a Memory (and FDSource) over a MAP_SHARED mapping of a real
// file, as famd serves region heaps.
type fileMem struct {
	path string
	data []byte

	mu    sync.Mutex
	items map[Key]memItem
}

type memItem struct {
	off, size uint64
	rights    uint8
}

func newFileMem(tb testing.TB, dir string, size int) *fileMem {
	tb.Helper()
	m, err := openFileMem(filepath.Join(dir, "heap"), size)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Munmap(m.data) })
	return m
}

func openFileMem(path string, size int) (*fileMem, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		return nil, err
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &fileMem{path: path, data: data, items: map[Key]memItem{}}, nil
}

// add registers an item of size bytes at off in the file and returns its
// key.
func (m *fileMem) add(off, size uint64, rights uint8) Key {
	var k Key
	rand.Read(k[:])
	m.addKey(k, off, size, rights)
	return k
}

func (m *fileMem) addKey(k Key, off, size uint64, rights uint8) {
	m.mu.Lock()
	m.items[k] = memItem{off, size, rights}
	m.mu.Unlock()
}

func (m *fileMem) Resolve(k Key) ([]byte, uint8, bool) {
	m.mu.Lock()
	it, ok := m.items[k]
	m.mu.Unlock()
	if !ok {
		return nil, 0, false
	}
	return m.data[it.off : it.off+it.size : it.off+it.size], it.rights, true
}

func (m *fileMem) OpenFD(k Key) (*os.File, uint64, uint64, uint8, error) {
	m.mu.Lock()
	it, ok := m.items[k]
	m.mu.Unlock()
	if !ok {
		return nil, 0, 0, 0, ErrStaleKey
	}
	flag := os.O_RDONLY
	if it.rights&RightWrite != 0 {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(m.path, flag, 0)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	return f, it.off, it.size, it.rights, nil
}

// serve starts s on a fresh listener of the network ("tcp" on loopback,
// "unix" in a temp dir) and returns the address.
func serve(tb testing.TB, s *Server, network string) string {
	tb.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(tb.TempDir(), "data.sock")
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	tb.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			tb.Errorf("Serve returned %v after Close", err)
		}
	})
	return l.Addr().String()
}

func dial(tb testing.TB, network, addr string, opts ClientOptions) *Client {
	tb.Helper()
	c, err := Dial(network, addr, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// The helper process: a server in its own process, so that tests can kill
// it with SIGKILL mid-transfer and start it again.
const (
	helperAddrEnv = "TRANSPORT_TEST_HELPER_ADDR"
	helperFileEnv = "TRANSPORT_TEST_HELPER_FILE"
	helperSize    = 64 << 20
)

var helperKey = Key{'h', 'e', 'l', 'p', 'e', 'r'}

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperAddrEnv); addr != "" {
		runHelper(addr, os.Getenv(helperFileEnv))
		return
	}
	os.Exit(m.Run())
}

func runHelper(addr, path string) {
	mem, err := openFileMem(path, helperSize)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	mem.addKey(helperKey, 0, helperSize, RightRead|RightWrite)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("listening", l.Addr())
	NewServer(mem, ServerOptions{}).Serve(l)
}

// startHelper runs the helper server process on addr and returns it and
// the address it listens on.
func startHelper(t *testing.T, addr, file string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperAddrEnv+"="+addr, helperFileEnv+"="+file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		t.Fatalf("helper server: %q %v", line, err)
	}
	return cmd, strings.TrimSpace(strings.TrimPrefix(line, "listening "))
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// within fails the test if fn takes longer than d, and returns its error.
func within(t *testing.T, d time.Duration, fn func() error) error {
	t.Helper()
	start := time.Now()
	err := fn()
	if el := time.Since(start); el > d {
		t.Fatalf("took %v, want under %v (err %v)", el, d, err)
	}
	return err
}
