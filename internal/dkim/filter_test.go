package dkim

import (
	"slices"
	"testing"

	"github.com/relayq/relayq/internal/dkim/dkimtest"
)

// A message begun with a key filter (a tenant's own keys) is signed only
// with the keys it allows: of its From: domain's keys the allowed ones;
// when it allows none of them, the parent domain's allowed keys; when it
// allows none at all, nothing.
func TestKeyFilter(t *testing.T) {
	keys := []Key{
		{Domain: "example.org", Selector: "a", Signer: edKey()},
		{Domain: "example.org", Selector: "b", Signer: edKey2()},
		{Domain: "mail.example.org", Selector: "m", Signer: edKey()},
	}
	s := NewSigner(Config{Keys: keys})
	only := func(sels ...string) KeyFilter {
		return func(domain, sel string) bool { return slices.Contains(sels, domain+":"+sel) }
	}
	const rest = "To: x@example.net\r\nSubject: hi\r\n\r\nbody\r\n"
	for _, tc := range []struct {
		name, from string
		allow      KeyFilter
		want       []string
	}{
		{"no filter", "a@example.org", nil, []string{"d=example.org s=a", "d=example.org s=b"}},
		{"one of two", "a@example.org", only("example.org:b"), []string{"d=example.org s=b"}},
		{"subdomain's key not ours: parent's", "a@mail.example.org", only("example.org:a"), []string{"d=example.org s=a"}},
		{"none of ours", "a@mail.example.org", only("other.example:x"), nil},
	} {
		m := s.BeginWith(tc.allow)
		msg := "From: " + tc.from + "\r\n" + rest
		m.Write([]byte(msg))
		prefix, err := m.Finish()
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := dkimtest.Signatures(append(prefix, msg...)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: signatures %q, want %q", tc.name, got, tc.want)
		}
	}
}
