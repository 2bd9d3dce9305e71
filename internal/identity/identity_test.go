package identity

import "testing"

func TestCredentialString(t *testing.T) {
	for _, tc := range []struct {
		c    Credential
		want string
	}{
		{Credential{}, ""},
		{Credential{Kind: User, Name: "billing"}, "user:billing"},
		{Credential{Kind: APIKey, Name: "shop"}, "key:shop"},
		{Credential{Name: "old"}, "old"},
		{Credential{Kind: APIKey}, ""},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.c, got, tc.want)
		}
		if got, want := tc.c.Authenticated(), tc.c.Name != ""; got != want {
			t.Errorf("%#v.Authenticated() = %v", tc.c, got)
		}
	}
}
