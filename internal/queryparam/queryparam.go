package queryparam

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/relayq/relayq/internal/suggest"
)

// UnknownError is a query parameter the endpoint does not take.
type UnknownError struct {
	// Name is the parameter as the request spelt it.
	Name string
	// Nearest is the known parameter closest to Name, "" for none.
	Nearest string
	// Known are the parameters the endpoint takes.
	Known []string
}

func (e *UnknownError) Error() string {
	msg := fmt.Sprintf("unknown query parameter %q", e.Name)
	if e.Nearest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Nearest)
	}
	return msg + "; " + Takes(e.Known)
}

// Takes says which parameters an endpoint takes, for error messages.
func Takes(known []string) string {
	if len(known) == 0 {
		return "this endpoint takes no query parameters"
	}
	return "this endpoint takes " + strings.Join(known, ", ")
}

// Check parses rawQuery (a URL's RawQuery) and returns its values when every
// parameter it names is one of known. Otherwise it returns an
// *UnknownError for the first unknown name in sorted order, or an error
// saying why the query string could not be parsed. It does not judge
// values: repeated and empty ones are the endpoint's to accept or refuse.
func Check(rawQuery string, known ...string) (url.Values, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("bad query string: %v", err)
	}
	var unknown []string
	for name := range q {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return q, nil
	}
	slices.Sort(unknown)
	return nil, &UnknownError{Name: unknown[0], Nearest: suggest.Nearest(unknown[0], known), Known: known}
}
