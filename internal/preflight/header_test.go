package preflight

import (
	"reflect"
	"testing"
)

func TestFromDomains(t *testing.T) {
	for _, c := range []struct {
		header string
		want   []string
	}{
		{"From: a@Example.COM\r\n", []string{"example.com"}},
		{"From: \"Shop, Inc\" <news@shop.example>\r\n", []string{"shop.example"}},
		{"From: =?x-unknown?Q?Shop?= <news@shop.example>\r\n", []string{"shop.example"}},
		{"From: a@one.example, b@two.example\r\n", []string{"one.example", "two.example"}},
		{"From: Shop\r\n <news@folded.example>\r\n", []string{"folded.example"}},
		{"Subject: no from\r\n", nil},
		{"From: undisclosed\r\n", nil},
	} {
		if got := fromDomains(readFields([]byte(c.header)).from); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %q, want %q", c.header, got, c.want)
		}
	}
}

// Header sections are the client's bytes: reading them never panics and
// a one-click verdict needs both fields.
func FuzzReadFields(f *testing.F) {
	f.Add([]byte("From: a@b.example\r\nList-Unsubscribe: <https://x.example/u>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"))
	f.Add([]byte("From: \"x\" <a@b>\r\n\tcont\r\nList-Unsubscribe: <https://\r\n"))
	f.Fuzz(func(t *testing.T, sec []byte) {
		fs := readFields(sec)
		_ = fromDomains(fs.from)
		if fs.oneClick() && (!fs.hasUnsub || !fs.hasPost) {
			t.Fatal("one-click without both fields")
		}
	})
}
