package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

// A configuration without streams keeps working: one stream, named by
// default_stream, weight 1.
func TestStreamsDefaultToOne(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "relayq.yaml", "submission:\n  default_stream: mail\n")
	c, err := Load(filepath.Join(dir, "relayq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Stream{{Name: "mail", Weight: 1}}; !reflect.DeepEqual(c.Streams, want) {
		t.Errorf("streams = %+v, want %+v", c.Streams, want)
	}
}

// The environment forms: streams as YAML, a key's stream as name:hash:stream.
func TestStreamsFromEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("RELAYQ_STREAMS", "[{name: transactional, weight: 10}, {name: bulk, weight: 1}]")
	t.Setenv("RELAYQ_SUBMISSION_DEFAULT_STREAM", "transactional")
	t.Setenv("RELAYQ_SUBMISSION_API_KEYS", "newsletter:"+aliceHash+":bulk")
	t.Setenv("RELAYQ_SUBMISSION_ALLOW_INSECURE_AUTH", "1")
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Submission.APIKeys[0].Stream != "bulk" || len(c.Streams) != 2 || c.Streams[0].Weight != 10 {
		t.Errorf("keys %+v streams %+v", c.Submission.APIKeys, c.Streams)
	}
}

func TestLoadRejectsBadStreams(t *testing.T) {
	const two = "streams:\n  - {name: transactional, weight: 10}\n  - {name: bulk, weight: 1}\n"
	wantRejected(t, []badConfig{{
		name: "weight zero",
		file: "streams:\n  - {name: bulk, weight: 0}\n",
		want: `config $FILE: streams[0].weight: 0 must be a whole number from 1 to 1000000 (its share against the other streams)`,
	}, {
		name: "unknown default stream",
		file: two,
		want: `config $FILE: submission.default_stream: "default" is not one of the streams listed under streams`,
	}, {
		name: "unknown stream of an api key",
		file: two + "submission:\n  default_stream: bulk\n  allow_insecure_auth: true\n  api_keys:\n    - {name: news, key_hash: \"" + aliceHash + "\", stream: bluk}\n",
		want: `config $FILE: submission.api_keys[0].stream: key "news" names stream "bluk", which streams does not list`,
	}, {
		name: "unknown stream of a user",
		file: two + "submission:\n  default_stream: bulk\n  allow_insecure_auth: true\n  users:\n    - {username: shop, password_hash: \"" + aliceHash + "\", stream: tx}\n",
		want: `config $FILE: submission.users[0].stream: user "shop" names stream "tx", which streams does not list`,
	}, {
		name: "stream twice",
		file: "submission:\n  default_stream: bulk\nstreams:\n  - {name: bulk}\n  - {name: bulk, weight: 2}\n",
		want: `config $FILE: streams[1]: stream "bulk" is listed twice`,
	}, {
		name: "bad name",
		file: "submission:\n  default_stream: bulk\nstreams:\n  - {name: bulk}\n  - {name: Big Mail}\n",
		want: `config $FILE: streams[1].name: "Big Mail" is not a stream name (1-32 lower-case letters, digits, '-' or '_')`,
	}})
}

// A stream's preflight checks are read per stream; absent, each is off.
func TestStreamPreflight(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "secret", "0123456789abcdef0123456789abcdef\n")
	writeFile(t, dir, "relayq.yaml", "submission:\n  default_stream: tx\nstreams:\n  - {name: tx}\n"+
		"  - {name: bulk, preflight: {dkim_alignment: refuse, dmarc: Warn, one_click: add}}\n"+
		"unsubscribe:\n  listen: [\"127.0.0.1:0\"]\n  url: https://u.example.org/\n  secret_file: "+filepath.Join(dir, "secret")+"\n")
	c, err := Load(filepath.Join(dir, "relayq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Stream{{Name: "tx", Weight: 1},
		{Name: "bulk", Weight: 1, Preflight: Preflight{DKIMAlignment: "refuse", DMARC: "warn", OneClick: "add"}}}
	if !reflect.DeepEqual(c.Streams, want) {
		t.Errorf("streams = %+v, want %+v", c.Streams, want)
	}
	if c.Unsubscribe.URL != "https://u.example.org" {
		t.Errorf("unsubscribe.url = %q", c.Unsubscribe.URL)
	}
}

func TestLoadRejectsBadPreflight(t *testing.T) {
	const head = "submission:\n  default_stream: bulk\nstreams:\n  - name: bulk\n    preflight: "
	wantRejected(t, []badConfig{{
		name: "unknown mode",
		file: head + "{dmarc: block}\n",
		want: `config $FILE: streams[0].preflight.dmarc: "block" is not one of off, warn, refuse`,
	}, {
		name: "add for dkim",
		file: head + "{dkim_alignment: add}\n",
		want: `config $FILE: streams[0].preflight.dkim_alignment: "add" is not one of off, warn, refuse`,
	}, {
		name: "unknown check",
		file: head + "{spf: warn}\n",
		want: `config $FILE: streams[0].preflight: unknown key "spf" (want dkim_alignment, dmarc, one_click)`,
	}, {
		name: "add without listener",
		file: head + "{one_click: add}\n",
		want: `config $FILE: streams[0].preflight.one_click: add needs unsubscribe.listen and unsubscribe.url: relayq's links must lead to its listener`,
	}, {
		name: "one-click fields left unsigned",
		file: head + "{one_click: refuse}\ndkim:\n  headers: [From, To, Subject, List-Unsubscribe]\n",
		want: `config $FILE: dkim.headers: lacks List-Unsubscribe or List-Unsubscribe-Post, which stream "bulk"'s one_click needs signed (RFC 8058 section 4)`,
	}, {
		name: "listener over http",
		file: "unsubscribe:\n  listen: [\"127.0.0.1:0\"]\n  url: http://u.example.org\n  secret_file: /nonexistent\n",
		want: `config $FILE: unsubscribe.url: "http://u.example.org" is not an https:// URL (RFC 8058 section 3.1: the one-click URI must be https)`,
	}, {
		name: "listener without secret",
		file: "unsubscribe:\n  listen: [\"127.0.0.1:0\"]\n  url: https://u.example.org\n",
		want: `config $FILE: unsubscribe.secret_file: empty: the links relayq writes must be signed (e.g. head -c 32 /dev/urandom | base64 > FILE)`,
	}})
}
