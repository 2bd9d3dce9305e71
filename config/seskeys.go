package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// SESKey is an access key for the SES v2 endpoint. SigV4 is an HMAC
// keyed by the secret itself, so the secret (not a hash) is read from
// SecretFile at load; the key's messages are the API key APIKey's.
type SESKey struct {
	AccessKeyID string
	SecretFile  string
	Secret      string
	APIKey      string
}

var sesKeyFields = []string{"access_key_id", "secret_file", "api_key"}

// accessKeyID is what an AWS access key ID may be: 16 to 128 word
// characters (the AWS API's own bounds).
var accessKeyID = regexp.MustCompile(`^[A-Za-z0-9_]{16,128}$`)

// sesKeys reads submission.ses_keys: a list of {access_key_id,
// secret_file, api_key}.
func (l *loader) sesKeys(key string) []SESKey {
	var out []SESKey // nil when none, as Default has it
	for _, e := range l.entries(key, "access_key_id/secret_file/api_key", sesKeyFields) {
		out = append(out, SESKey{AccessKeyID: e.str("access_key_id"), SecretFile: strings.TrimSpace(e.str("secret_file")), APIKey: e.str("api_key")})
	}
	return out
}

// validateSESKeys checks each key's ID, reads its secret and checks that
// its api_key names one of submission.api_keys.
func (l *loader) validateSESKeys(s *Submission) {
	const key = "submission.ses_keys"
	names := map[string]bool{}
	for _, k := range s.APIKeys {
		names[k.Name] = true
	}
	seen := map[string]bool{}
	for i := range s.SESKeys {
		k := &s.SESKeys[i]
		at := fmt.Sprintf("[%d]", i)
		switch {
		case !accessKeyID.MatchString(k.AccessKeyID):
			l.failAt(key, at+".access_key_id", "%q is not an access key ID (16 to 128 letters, digits or '_')", k.AccessKeyID)
		case seen[k.AccessKeyID]:
			l.failAt(key, at+".access_key_id", "%q is listed twice", k.AccessKeyID)
		case !names[k.APIKey]:
			l.failAt(key, at+".api_key", "%q names no entry of submission.api_keys (its messages take that key's stream and limits)", k.APIKey)
		case k.SecretFile == "":
			l.failAt(key, at+".secret_file", "empty: the file holding the secret access key")
		default:
			b, err := os.ReadFile(k.SecretFile)
			k.Secret = strings.TrimSpace(string(b))
			switch {
			case err != nil:
				l.failAt(key, at+".secret_file", "%w", err)
			case len(k.Secret) < 16:
				l.failAt(key, at+".secret_file", "%s holds %d bytes, at least 16 needed", k.SecretFile, len(k.Secret))
			}
		}
		seen[k.AccessKeyID] = true
	}
}
