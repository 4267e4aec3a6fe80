package embed_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

const clientHelperEnv = "EMBED_TEST_CLIENT_SOCKET"

// TestClientHelperProcess is the client process of
// TestKilledClientLeavesNoKeys; run alone it does nothing.
func TestClientHelperProcess(t *testing.T) {
	sock := os.Getenv(clientHelperEnv)
	if sock == "" {
		t.Skip("helper process only")
	}
	f, err := core.Initialize(core.Options{Server: "unix:" + sock, UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 60 * time.Second})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	r, err := f.CreateRegion("crash", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; i < 3; i++ {
		if _, err := r.Allocate(fmt.Sprint("item", i), 4096, 0o600); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	select {} // until killed
}

func TestKilledClientLeavesNoKeys(t *testing.T) {
	d, err := embed.Start(embed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClientHelperProcess$")
	cmd.Env = append(os.Environ(), clientHelperEnv+"="+d.SocketPath())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("client process: %q", line)
	}
	if d.Server().Keys() != 3 || d.Server().Sessions() != 1 {
		t.Fatalf("with the client running: %d keys, %d sessions; want 3 and 1", d.Server().Keys(), d.Server().Sessions())
	}
	// kill -9: no fam_finalize, no CloseItem; only the kernel closing the
	// client's sockets tells famd.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for deadline := time.Now().Add(60 * time.Second); d.Server().Keys() != 0 || d.Server().Sessions() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("60s after the client was killed famd still holds %d keys and %d sessions", d.Server().Keys(), d.Server().Sessions())
		}
	}
}
