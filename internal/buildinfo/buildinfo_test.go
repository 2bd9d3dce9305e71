package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	embedded := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/relayq/relayq", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
		},
	}
	devel := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}
	tests := []struct {
		name               string
		ver, com, dt       string
		bi                 *debug.BuildInfo
		want, wantC, wantD string
	}{
		{"linker wins", "v1.5.0-2-gdeadbee-dirty", "deadbee", "2026-12-01T00:00:00Z", embedded, "v1.5.0-2-gdeadbee-dirty", "deadbee", "2026-12-01T00:00:00Z"},
		{"go install module version", "", "", "", embedded, "v1.4.0", "abc123", "2026-11-30T10:00:00Z"},
		{"go build in a checkout", "", "", "", devel, "dev", "", ""},
		{"no build info", "", "", "", nil, "dev", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := from(tt.ver, tt.com, tt.dt, tt.bi)
			if got.Version != tt.want || got.Commit != tt.wantC || got.Date != tt.wantD {
				t.Errorf("got %+v, want version %q commit %q date %q", got, tt.want, tt.wantC, tt.wantD)
			}
			if got.GoVersion == "" {
				t.Error("empty GoVersion")
			}
		})
	}
}

func TestStringNamesEverything(t *testing.T) {
	s := Info{Version: "v1.0.0", Commit: "abc", Date: "2026-11-30T10:00:00Z", GoVersion: "go1.26.0"}.String()
	for _, w := range []string{"relayq v1.0.0", "commit abc", "built 2026-11-30T10:00:00Z", "go1.26.0"} {
		if !strings.Contains(s, w) {
			t.Errorf("%q lacks %q", s, w)
		}
	}
}
