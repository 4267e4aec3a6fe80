package version

import (
	"runtime/debug"
	"testing"
)

// The fallback never yields the toolchain's "(devel)" placeholder.
func TestFromBuildInfo(t *testing.T) {
	cases := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v3.2.1"}}, "v3.2.1"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "unknown"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "g0123456789ab-dirty"},
		{debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, "gabc"},
	}
	for _, c := range cases {
		if got := fromBuildInfo(&c.bi); got != c.want {
			t.Errorf("fromBuildInfo(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
}

// A stamped version wins over anything the toolchain recorded.
func TestStamped(t *testing.T) {
	old := Version
	defer func() { Version = old }()
	Version = "9.9.9-test"
	if got := String(); got != "9.9.9-test" {
		t.Fatalf("String() = %q with Version stamped", got)
	}
}
