package mime7bit

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/goldenfile"
)

// The converted form of testdata/*.eml, byte for byte: what a server
// without 8BITMIME receives (quoted-printable text with soft breaks, base64
// wrapped at 76, untouched 7-bit parts and boundaries, no preamble).
func TestGolden(t *testing.T) {
	checkGolden(t, "testdata/*.eml", Scan, func(*testing.T, []byte) {})
}

// checkGolden converts each file matching pattern by the plan scan makes
// of it, runs check on the result and compares it with the file's .golden
// twin (goldenfile: -update rewrites it).
func checkGolden(t *testing.T, pattern string, scan func(io.Reader) (Plan, error), check func(*testing.T, []byte)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := scan(bytes.NewReader(src))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := p.Convert(&out, bytes.NewReader(src)); err != nil {
				t.Fatal(err)
			}
			check(t, out.Bytes())
			goldenfile.Check(t, strings.TrimSuffix(in, ".eml")+".golden", out.Bytes())
		})
	}
}
