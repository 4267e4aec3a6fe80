// Package version says which build of OpenFAM-in-Go a program is. The
// Makefile stamps Version at link time (-ldflags -X) from the VERSION file
// and git; String falls back to what the Go toolchain recorded for builds
// made without make (go build, go install), so no tool ever reports the
// toolchain's placeholder "(devel)".
package version

import "runtime/debug"

// Version is set by the linker: -X github.com/gofam/openfam/internal/version.Version=V.
// Empty in a build that was not stamped.
var Version string

// String returns the stamped version, else a module version from go
// install, else the git revision go build recorded (with "-dirty" for
// uncommitted changes), else "unknown".
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo is String's fallback, separate so that it can be tested
// with made-up build information.
func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "g" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}
