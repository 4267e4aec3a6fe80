// Package smaps reads /proc/PID/smaps to tell how many pages of the files
// under a directory a process has mapped dirty: pages written but not yet
// on stable storage. The persistence tests use it (issue 20) because no
// read of a file can tell: reading through the page cache shows unwritten
// data, and an O_DIRECT read writes the dirty pages back first.
package smaps

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DirtyKB returns the kB of Shared_Dirty plus Private_Dirty of every
// mapping of process pid (0: this process) whose file lies under dir.
func DirtyKB(pid int, dir string) (int, error) {
	dir = filepath.Clean(dir) + "/"
	return DirtyKBMatch(pid, func(path string) bool { return strings.HasPrefix(path, dir) })
}

// PersistentFile reports whether path is a persistent region's file: a
// heap file of an embedded store or famd (DATA/regions/) or a segment of
// a memory server (DATA/segments/). Volatile ones live elsewhere.
func PersistentFile(path string) bool {
	return strings.Contains(path, "/regions/") || strings.Contains(path, "/segments/")
}

// DirtyKBMatch is DirtyKB for the mappings whose file path match accepts.
func DirtyKBMatch(pid int, match func(path string) bool) (int, error) {
	p := "/proc/self/smaps"
	if pid != 0 {
		p = fmt.Sprintf("/proc/%d/smaps", pid)
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if isHeader(fields[0]) {
			// addr perms offset dev inode [path]
			in = len(fields) >= 6 && match(fields[5])
			continue
		}
		if !in || len(fields) < 2 {
			continue
		}
		if fields[0] == "Shared_Dirty:" || fields[0] == "Private_Dirty:" {
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, fmt.Errorf("%s: %q: %v", p, line, err)
			}
			total += n
		}
	}
	return total, sc.Err()
}

// isHeader reports whether s is a mapping's address range "lo-hi".
func isHeader(s string) bool {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok || lo == "" || hi == "" {
		return false
	}
	for _, part := range []string{lo, hi} {
		if _, err := strconv.ParseUint(part, 16, 64); err != nil {
			return false
		}
	}
	return true
}
