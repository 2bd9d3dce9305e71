package hostcheck

import "testing"

// TestAllows: IP literals and localhost with any port, configured names as
// configured (any port for "name", that port only for "name:port"),
// compared without case or trailing dot; every other name refused.
func TestAllows(t *testing.T) {
	r := New([]string{"relayq-a", "Relay1.Example.NET:8025", " ", "[mx.test]"})
	tests := []struct {
		host string
		want bool
	}{
		{"", true},
		{"127.0.0.1:8026", true},
		{"127.0.0.1", true},
		{"[::1]:8026", true},
		{"10.1.2.3:9", true},
		{"localhost:8026", true},
		{"LOCALHOST.", true},
		{"relayq-a", true},
		{"relayq-a:1234", true},
		{"relay1.example.net:8025", true},
		{"relay1.example.net.:8025", true},
		{"relay1.example.net:8026", false},
		{"relay1.example.net", false},
		{"mx.test:25", true},
		{"attacker.example:8026", false},
		{"localhost.attacker.example", false},
		{"127.0.0.1.nip.io:8026", false},
	}
	for _, tt := range tests {
		if got := r.Allows(tt.host); got != tt.want {
			t.Errorf("Allows(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
	if (Rule{}).Allows("name.test") || !(Rule{}).Allows("127.0.0.1:1") {
		t.Error("the zero Rule: want IP literals and localhost only")
	}
}

// FuzzAllows: any Host header a client sends is judged without a panic.
func FuzzAllows(f *testing.F) {
	for _, s := range []string{"", "127.0.0.1:80", "[::1", "a:b:c", "relayq-a.:1", "\x00:", "[fe80::1%eth0]:1"} {
		f.Add(s)
	}
	r := New([]string{"relayq-a", "b.test:8025"})
	f.Fuzz(func(t *testing.T, host string) {
		_ = r.Allows(host)
	})
}
