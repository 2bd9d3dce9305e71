package sendmail

import (
	"strings"
	"testing"
)

// qualifyList completes bare local parts and nothing else: display names,
// comments, folding and groups keep their bytes, and a field that does not
// parse once completed comes back as it was.
var qualifyListCases = []struct {
	in, want string
}{
	{" root\r\n", " root@h.test\r\n"},
	{" root (Cron Daemon)\r\n", " root@h.test (Cron Daemon)\r\n"},
	{" \"(Cron Daemon)\" <root>\r\n", " \"(Cron Daemon)\" <root@h.test>\r\n"},
	{" root,  Ops Team <ops> (on call),\r\n\tadmin@x.test\r\n", " root@h.test,  Ops Team <ops@h.test> (on call),\r\n\tadmin@x.test\r\n"},
	{" root\r\n (Cron\r\n  Daemon)\r\n", " root@h.test\r\n (Cron\r\n  Daemon)\r\n"},
	{" first.last\r\n", " first.last@h.test\r\n"},
	{" \"first last\"\r\n", " \"first last\"@h.test\r\n"},
	{" =?utf-8?q?J=C3=B6rg?= <joerg>\r\n", " =?utf-8?q?J=C3=B6rg?= <joerg@h.test>\r\n"},
	{" team: root, b@x.test;, c\r\n", " team: root@h.test, b@x.test;, c@h.test\r\n"},
	{" \"a, b\" <ab>\r\n", " \"a, b\" <ab@h.test>\r\n"},
	// Nothing to complete: the field is not touched.
	{" a@x.test (A), \"B\" <b@x.test>\r\n", ""},
	{" undisclosed-recipients:;\r\n", ""},
	{" <>\r\n", ""},
	// Not an address list once completed, or not one the scan can follow.
	{" John Smith\r\n", ""},
	{" <root\r\n", ""},
	{" root (unclosed\r\n", ""},
	{" \"root\r\n", ""},
	{" <root> tail\r\n", ""},
}

func TestQualifyList(t *testing.T) {
	for _, tc := range qualifyListCases {
		got, ok := qualifyList([]byte(tc.in), "h.test")
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if string(got) != want || ok != (tc.want != "") {
			t.Errorf("%q: got %q (%v), want %q", tc.in, got, ok, want)
		}
	}
}

// For any bytes: no panic; a value left alone comes back as it was; a
// completed one only gained "@" and the host name, and parses.
func FuzzQualifyList(f *testing.F) {
	for _, tc := range qualifyListCases {
		f.Add(tc.in)
	}
	const host = "q.invalid"
	f.Fuzz(func(t *testing.T, in string) {
		out, ok := qualifyList([]byte(in), host)
		if !ok {
			if string(out) != in {
				t.Fatalf("%q left alone but changed to %q", in, out)
			}
			return
		}
		if strings.ReplaceAll(string(out), "@"+host, "") != strings.ReplaceAll(in, "@"+host, "") {
			t.Fatalf("%q became %q: more than @%s inserted", in, out, host)
		}
	})
}
