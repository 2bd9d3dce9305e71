package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueRef is a comment citing relayq's own tracker: the word issue and a
// number. Upstream references name their repository (golang/go#75804)
// and are not caught.
var issueRef = regexp.MustCompile(`(?i)//.*\bissues? ?[0-9]+`)

// Comments give the rule and the reason, or point at a decision record
// under docs/decisions/; an issue number makes the reader leave the code
// to learn either, and the tracker is not part of the repository.
func TestNoCommentCitesAnIssue(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "third_party", "testdata", "bin", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			if issueRef.MatchString(sc.Text()) {
				t.Errorf("%s:%d cites an issue number; give the rule and the reason, or point at docs/decisions/: %s", path, n, strings.TrimSpace(sc.Text()))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
