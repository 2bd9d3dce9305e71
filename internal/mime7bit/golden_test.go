package mime7bit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// The converted form of testdata/*.eml, byte for byte: what a server
// without 8BITMIME receives (quoted-printable text with soft breaks, base64
// wrapped at 76, untouched 7-bit parts and boundaries, no preamble).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.eml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Scan(bytes.NewReader(src))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := p.Convert(&out, bytes.NewReader(src)); err != nil {
				t.Fatal(err)
			}
			golden := in[:len(in)-len(".eml")] + ".golden"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("converted %s differs from %s:\n%s", in, golden, out.Bytes())
			}
		})
	}
}
