package fabric

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core/transport"
)

// cpuTicks is this process's utime+stime in clock ticks (/proc/self/stat).
func cpuTicks(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("SKIP: no /proc/self/stat: %v", err)
	}
	// Fields after the command name, which ends at the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime (field 14)
	s, _ := strconv.ParseInt(f[12], 10, 64) // stime (field 15)
	return u + s
}

// TestIdleCPU: an open server and client endpoint pair, with a key
// exposed and used once, costs (near) no CPU while idle. Set
// FABRIC_IDLE_SECONDS to measure longer (the bench script uses 10).
func TestIdleCPU(t *testing.T) {
	secs := 3
	if s, err := strconv.Atoi(os.Getenv("FABRIC_IDLE_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	forEach(t, func(t *testing.T, prov string) {
		pr := openPair(t, prov, Options{})
		k, _ := pr.ctl.add(4096, transport.RightRead|transport.RightWrite)
		if err := pr.p.Get(k, 0, make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		// Let the polling progress (shm) reach its idle pace first.
		time.Sleep(50 * time.Millisecond)
		before, start := cpuTicks(t), time.Now()
		time.Sleep(time.Duration(secs) * time.Second)
		used := float64(cpuTicks(t)-before) / 100 // USER_HZ is 100 on Linux
		pct := 100 * used / time.Since(start).Seconds()
		t.Logf("provider %s: idle endpoint pair used %.2f s CPU in %d s: %.2f%% of a core", prov, used, secs, pct)
		limit := 5.0
		if raceOn {
			limit = 12 // shm measured 3-6% under -race on a busy 2-core host
		}
		if pct >= limit {
			t.Fatalf("provider %s: idle CPU %.2f%%, want < %.0f%%", prov, pct, limit)
		}
	})
}
