package submission

import "testing"

func TestSignatureNames(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"", ""},
		{"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.org; s=sel1;\r\n\th=from:to; bh=x; b=y\r\n", "example.org/sel1"},
		{"DKIM-Signature: v=1; a=ed25519-sha256; d=example.org;\r\n s=ed\r\n 1; b=z\r\nDKIM-Signature: v=1; d=example.org; s=rsa; b=w\r\n", "example.org/ed1 example.org/rsa"},
		{"dkim-signature:d=a.example;s=k\r\n", "a.example/k"},
		{"X-Other: d=a; s=b\r\n", ""},
		{"DKIM-Signature: v=1; d=example.org; b=no-selector\r\n", ""},
	} {
		if got := signatureNames([]byte(c.prefix)); got != c.want {
			t.Errorf("signatureNames(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
}
