package sendmail

import (
	"reflect"
	"strings"
	"testing"
)

// The options programs actually use, as they use them.
func TestParseOptionTable(t *testing.T) {
	tests := []struct {
		name string
		args string
		want Options
		err  string
	}{
		{"recipients only", "a@x b@y", Options{Recipients: []string{"a@x", "b@y"}}, ""},
		{"-t", "-t", Options{ExtractRecipients: true}, ""},
		{"-i", "-i", Options{IgnoreDots: true}, ""},
		{"-oi", "-oi", Options{IgnoreDots: true}, ""},
		{"-o i", "-o i", Options{IgnoreDots: true}, ""},
		{"grouped -ti", "-ti", Options{ExtractRecipients: true, IgnoreDots: true}, ""},
		{"PHP default", "-t -i", Options{ExtractRecipients: true, IgnoreDots: true}, ""},
		{"PHP with sender", "-t -i -f bounce@x", Options{ExtractRecipients: true, IgnoreDots: true, From: "bounce@x"}, ""},
		{"-f attached", "-fbounce@x a@y", Options{From: "bounce@x", Recipients: []string{"a@y"}}, ""},
		{"-r", "-r bounce@x a@y", Options{From: "bounce@x", Recipients: []string{"a@y"}}, ""},
		{"-F", "-F Cron_Daemon a@y", Options{FullName: "Cron_Daemon", Recipients: []string{"a@y"}}, ""},
		{"-F with spaces", "-F|Cron Daemon|a@y", Options{FullName: "Cron Daemon", Recipients: []string{"a@y"}}, ""},
		{"-bm", "-bm a@y", Options{Mode: ModeDeliver, Recipients: []string{"a@y"}}, ""},
		{"-bp", "-bp", Options{Mode: ModeQueueList}, ""},
		{"-bi", "-bi", Options{Mode: ModeNoop}, ""},
		{"-I", "-I", Options{Mode: ModeNoop}, ""},
		{"-v", "-v a@y", Options{Verbose: true, Recipients: []string{"a@y"}}, ""},
		{"legacy ignored", "-odi -oem -em -odb -oQ/tmp -U -m -n -G -x -N never -R hdrs -V envid -X log -B 8BITMIME -L tag -h 10 -O a=b -Ax a@y", Options{Recipients: []string{"a@y"}}, ""},
		{"-C and --server", "-C /etc/r.yaml --server 127.0.0.1:2525 a@y", Options{Config: "/etc/r.yaml", Server: "127.0.0.1:2525", Recipients: []string{"a@y"}}, ""},
		{"--server=", "--server=127.0.0.1:1 --config=c.yaml", Options{Server: "127.0.0.1:1", Config: "c.yaml"}, ""},
		{"-- ends options", "-t -- -weird@x", Options{ExtractRecipients: true, Recipients: []string{"-weird@x"}}, ""},
		{"unknown letter", "-z", Options{}, "unknown option -z"},
		{"unknown long", "--frobnicate", Options{}, "unknown option --frobnicate"},
		{"-f without value", "-f", Options{}, "option -f needs a value"},
		{"-bs -i", "-bs -i", Options{Mode: ModeSMTP, IgnoreDots: true}, ""},
		{"-bd unsupported", "-bd", Options{}, "-bd is not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if strings.Contains(tc.args, "|") {
				args = strings.Split(tc.args, "|")
			} else {
				args = strings.Fields(tc.args)
			}
			got, err := Parse(args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParse: any command line parses or fails cleanly.
func FuzzParse(f *testing.F) {
	f.Add("-t\x00-i\x00-f\x00a@b")
	f.Add("-oi\x00--server=x\x00--\x00-z")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = Parse(strings.Split(s, "\x00"))
	})
}
