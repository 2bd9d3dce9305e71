package sendmail

import (
	"fmt"
	"strings"
)

// Mode is what the command does, chosen by -b.
type Mode int

const (
	// ModeDeliver reads a message and submits it (-bm, the default).
	ModeDeliver Mode = iota
	// ModeQueueList prints the relay's queue (-bp, like mailq).
	ModeQueueList
	// ModeNoop does nothing successfully (-bi/-I: there are no aliases).
	ModeNoop
	// ModeSMTP speaks SMTP on standard input and output (-bs), relaying
	// each message to the relay.
	ModeSMTP
)

// Options are the parsed command line.
type Options struct {
	Mode Mode
	// ExtractRecipients (-t) adds the To, Cc and Bcc addresses.
	ExtractRecipients bool
	// IgnoreDots (-i, -oi): a line with a single "." does not end the message.
	IgnoreDots bool
	// From (-f, -r) is the envelope sender; "<>" means the null sender.
	From string
	// FullName (-F) is the sender's name for an added From header.
	FullName string
	Verbose  bool
	// Server (--server host:port) overrides where to submit.
	Server string
	// Config (-C FILE, --config FILE) is the relay's configuration file.
	Config     string
	Recipients []string
}

// argKind says whether a single-letter option takes an argument.
type argKind int

const (
	noArg argKind = iota
	withArg
)

// letters is sendmail's option set as programs use it (Postfix's sendmail
// accepts the same). Options not listed are refused with EX_USAGE.
var letters = map[byte]argKind{
	'b': withArg, 'C': withArg, 'F': withArg, 'f': withArg, 'r': withArg, 'o': withArg,
	'e': withArg, 'h': withArg, 'N': withArg, 'R': withArg, 'V': withArg, 'X': withArg,
	'B': withArg, 'L': withArg, 'O': withArg, 'p': withArg, 'A': withArg,
	't': noArg, 'i': noArg, 'v': noArg, 'm': noArg, 'n': noArg, 'c': noArg,
	'G': noArg, 'I': noArg, 'U': noArg, 'x': noArg,
}

// Parse reads the command line getopt-style: letters may be grouped
// ("-ti"), an argument may be attached ("-fme@x", "-oi") or the next word
// ("-f me@x"), "--" ends the options. Long options: --server, --config.
func Parse(args []string) (Options, error) {
	var o Options
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.Recipients = append(o.Recipients, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a[2:], "=")
			if name != "server" && name != "config" {
				return o, fmt.Errorf("unknown option %s", a)
			}
			if !hasVal {
				if i+1 >= len(args) {
					return o, fmt.Errorf("option --%s needs a value", name)
				}
				i++
				val = args[i]
			}
			if name == "server" {
				o.Server = val
			} else {
				o.Config = val
			}
			continue
		}
		if len(a) < 2 || a[0] != '-' {
			o.Recipients = append(o.Recipients, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			kind, ok := letters[c]
			if !ok {
				return o, fmt.Errorf("unknown option -%c", c)
			}
			if kind == noArg {
				o.flag(c)
				continue
			}
			val := a[j+1:]
			if val == "" {
				if i+1 >= len(args) {
					return o, fmt.Errorf("option -%c needs a value", c)
				}
				i++
				val = args[i]
			}
			if err := o.value(c, val); err != nil {
				return o, err
			}
			break
		}
	}
	return o, nil
}

func (o *Options) flag(c byte) {
	switch c {
	case 't':
		o.ExtractRecipients = true
	case 'i':
		o.IgnoreDots = true
	case 'v':
		o.Verbose = true
	case 'I':
		o.Mode = ModeNoop
	}
	// m, n, c, G, U, x: historical, no meaning for a relay client.
}

// bModes is what each supported -b value selects.
var bModes = map[string]Mode{"m": ModeDeliver, "p": ModeQueueList, "i": ModeNoop, "s": ModeSMTP}

func (o *Options) value(c byte, v string) error {
	switch c {
	case 'b':
		m, ok := bModes[v]
		if !ok {
			return fmt.Errorf("-b%s is not supported (only -bm, -bs, -bp, -bi)", v)
		}
		o.Mode = m
	case 'f', 'r':
		o.From = v
	case 'F':
		o.FullName = v
	case 'C':
		o.Config = v
	case 'o':
		if v == "i" {
			o.IgnoreDots = true
		}
		// -odb, -odi, -oem, -oQ..., -om: delivery and error modes the relay decides.
	}
	// -e, -h, -N, -R, -V, -X, -B, -L, -O, -p, -A: accepted and ignored.
	return nil
}
