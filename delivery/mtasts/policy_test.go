package mtasts

import (
	"testing"
	"time"
)

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		name, in string
		want     Policy
		wantErr  bool
	}{
		{"RFC example", "version: STSv1\nmode: enforce\nmx: mail.example.com\nmx: *.example.net\nmx: backupmx.example.com\nmax_age: 604800\n",
			Policy{Mode: ModeEnforce, MX: []string{"mail.example.com", "*.example.net", "backupmx.example.com"}, MaxAge: 604800 * time.Second}, false},
		{"CRLF, spaces, unknown field", "version: STSv1\r\nmode:testing\r\nmx: MX.Example.com.\r\nfoo: bar\r\nmax_age:  86400 \r\n",
			Policy{Mode: ModeTesting, MX: []string{"mx.example.com"}, MaxAge: 86400 * time.Second}, false},
		{"none needs no mx", "version: STSv1\nmode: none\nmax_age: 0\n", Policy{Mode: ModeNone}, false},
		{"first mode counts", "version: STSv1\nmode: testing\nmode: enforce\nmx: a.example\nmax_age: 1\n",
			Policy{Mode: ModeTesting, MX: []string{"a.example"}, MaxAge: time.Second}, false},
		{"no version", "mode: enforce\nmx: a.example\nmax_age: 1\n", Policy{}, true},
		{"wrong version", "version: STSv2\nmode: enforce\nmx: a.example\nmax_age: 1\n", Policy{}, true},
		{"bad mode", "version: STSv1\nmode: strict\nmx: a.example\nmax_age: 1\n", Policy{}, true},
		{"enforce without mx", "version: STSv1\nmode: enforce\nmax_age: 1\n", Policy{}, true},
		{"no max_age", "version: STSv1\nmode: enforce\nmx: a.example\n", Policy{}, true},
		{"max_age too big", "version: STSv1\nmode: enforce\nmx: a.example\nmax_age: 31557601\n", Policy{}, true},
		{"negative max_age", "version: STSv1\nmode: enforce\nmx: a.example\nmax_age: -1\n", Policy{}, true},
		{"bad mx", "version: STSv1\nmode: enforce\nmx: a b.example\nmax_age: 1\n", Policy{}, true},
		{"not key: value", "version: STSv1\nmode enforce\n", Policy{}, true},
		{"HTML error page", "<html><body>Not found</body></html>", Policy{}, true},
	}
	for _, tt := range tests {
		got, err := ParsePolicy([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: error %v, want error %v", tt.name, err, tt.wantErr)
			continue
		}
		if err == nil && (got.Mode != tt.want.Mode || got.MaxAge != tt.want.MaxAge || len(got.MX) != len(tt.want.MX)) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
		for i := range got.MX {
			if err == nil && got.MX[i] != tt.want.MX[i] {
				t.Errorf("%s: mx %q, want %q", tt.name, got.MX, tt.want.MX)
			}
		}
	}
}

func TestMatches(t *testing.T) {
	p := Policy{MX: []string{"mail.example.com", "*.example.net"}}
	tests := []struct {
		host string
		want bool
	}{
		{"mail.example.com", true},
		{"MAIL.example.com.", true},
		{"mx1.example.net", true},
		{"example.net", false},     // the wildcard needs a label
		{"a.b.example.net", false}, // and only one (RFC 8461 section 4.1)
		{"mail.example.com.evil", false},
		{"xmail.example.com", false},
		{".example.net", false},
	}
	for _, tt := range tests {
		if got := p.Matches(tt.host); got != tt.want {
			t.Errorf("Matches(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func TestParseTXT(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"v=STSv1; id=20160831085700Z;", "20160831085700Z", false},
		{"v=STSv1;id=abc", "abc", false},
		{"v=STSv1; id=abc; ext=1", "abc", false},
		{"id=abc; v=STSv1", "", true},
		{"v=STSv1;", "", true},
		{"v=STSv1; id=a-b", "", true},
		{"v=STSv1; id=123456789012345678901234567890123", "", true},
		{"v=spf1 -all", "", true},
	}
	for _, tt := range tests {
		got, err := ParseTXT(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseTXT(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte("version: STSv1\nmode: enforce\nmx: mail.example.com\nmx: *.example.net\nmax_age: 604800\n"))
	f.Add([]byte("version: STSv1\r\nmode: none\r\nmax_age: 0\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePolicy(b)
		if err != nil {
			return
		}
		if p.MaxAge < 0 || p.MaxAge > MaxMaxAge || (p.Mode != ModeNone && len(p.MX) == 0) {
			t.Fatalf("accepted an invalid policy %+v", p)
		}
		for _, mx := range p.MX {
			p.Matches(mx)
		}
	})
}

func FuzzParseTXT(f *testing.F) {
	f.Add("v=STSv1; id=20160831085700Z;")
	f.Add("v=STSv1;;id=x;id=y")
	f.Fuzz(func(t *testing.T, s string) {
		if id, err := ParseTXT(s); err == nil && !validID(id) {
			t.Fatalf("accepted id %q", id)
		}
	})
}
