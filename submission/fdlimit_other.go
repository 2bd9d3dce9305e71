//go:build !unix

package submission

// softFDLimit is 0 (unknown) where there is no RLIMIT_NOFILE: no
// descriptor reserve is kept.
func softFDLimit() int { return 0 }
