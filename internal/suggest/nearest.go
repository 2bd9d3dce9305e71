package suggest

import "strings"

// maxEdits is the farthest a misspelling may be from the word meant: more
// than two edits is a different word, not a typo.
const maxEdits = 2

// Nearest returns the word of known closest to word, ignoring case, at most
// two edits away, or "" when none is. Of equally close words the first in
// known wins.
func Nearest(word string, known []string) string {
	best, bestDist := "", maxEdits+1
	lw := strings.ToLower(word)
	for _, k := range known {
		if d := Distance(lw, strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
