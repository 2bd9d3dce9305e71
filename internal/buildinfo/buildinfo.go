package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker; see doc.go.
var (
	version string
	commit  string
	date    string
)

// Info describes one build.
type Info struct {
	Version   string // v1.2.3, v1.2.3-4-gabcdef0-dirty, a pseudo-version or "dev"
	Commit    string // VCS revision, "" when unknown
	Date      string // build (or commit) time, RFC 3339, "" when unknown
	GoVersion string // runtime.Version()
}

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(version, commit, date, bi)
}

// from merges the linker values with what Go embedded; the linker wins.
func from(ver, com, dt string, bi *debug.BuildInfo) Info {
	i := Info{Version: ver, Commit: com, Date: dt, GoVersion: runtime.Version()}
	if bi != nil {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Commit == "":
				i.Commit = s.Value
			case s.Key == "vcs.time" && i.Date == "":
				i.Date = s.Value
			}
		}
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	return i
}

// String is the one line `relayq version` prints.
func (i Info) String() string { return i.Line("relayq") }

// Line is String for another program of this module (`fakemx --version`).
func (i Info) Line(program string) string {
	s := program + " " + i.Version
	if i.Commit != "" {
		s += " commit " + i.Commit
	}
	if i.Date != "" {
		s += " built " + i.Date
	}
	return fmt.Sprintf("%s %s", s, i.GoVersion)
}
