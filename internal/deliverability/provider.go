package deliverability

import "strings"

// Providers are the provider names the figures use, "other" last.
var Providers = []string{"gmail", "yahoo", "outlook", "apple", "other"}

// byDomain maps mailbox domains to their provider (the big consumer
// domains; a provider's business customers are known by their MX).
var byDomain = map[string]string{
	"gmail.com": "gmail", "googlemail.com": "gmail",
	"yahoo.com": "yahoo", "ymail.com": "yahoo", "rocketmail.com": "yahoo", "aol.com": "yahoo",
	"yahoo.co.uk": "yahoo", "yahoo.fr": "yahoo", "yahoo.de": "yahoo", "yahoo.co.jp": "yahoo",
	"outlook.com": "outlook", "hotmail.com": "outlook", "live.com": "outlook", "msn.com": "outlook",
	"hotmail.co.uk": "outlook", "hotmail.fr": "outlook", "outlook.de": "outlook", "live.co.uk": "outlook",
	"icloud.com": "apple", "me.com": "apple", "mac.com": "apple",
}

// byMX maps MX host name suffixes to their provider.
var byMX = []struct{ suffix, provider string }{
	{".google.com", "gmail"}, {".googlemail.com", "gmail"},
	{".yahoodns.net", "yahoo"},
	{".outlook.com", "outlook"}, {".hotmail.com", "outlook"},
	{".icloud.com", "apple"},
}

// ProviderOf is the provider of a recipient address, or of the MX host
// that answered for it (remoteMTA, "" when unknown).
func ProviderOf(recipient, remoteMTA string) string {
	d := strings.ToLower(recipient[strings.LastIndexByte(recipient, '@')+1:])
	if p, ok := byDomain[strings.TrimSuffix(d, ".")]; ok {
		return p
	}
	mx := "." + strings.ToLower(strings.TrimSuffix(remoteMTA, "."))
	for _, m := range byMX {
		if strings.HasSuffix(mx, m.suffix) {
			return m.provider
		}
	}
	return "other"
}
