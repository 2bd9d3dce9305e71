// Package buildinfo says which build of relayq is running: version, commit,
// build date and Go version.
//
// Invariants: Get never returns an empty Version. The values come from the
// linker (-ldflags "-X github.com/relayq/relayq/internal/buildinfo.version=..."; the
// Makefile sets them from `git describe --tags --always --dirty`); when the
// linker set nothing, from the module and VCS data Go embeds in the binary
// (`go install ...@v1.2.3` gives v1.2.3); "dev" only when neither exists.
// It imports only the standard library.
package buildinfo
