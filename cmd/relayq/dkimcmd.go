package main

// `relayq dkim keygen` and `relayq dkim check`, and the signer serve wires
// into submission (signing at acceptance) and delivery (signing reports).
// The logic lives in the dkim package.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/relayq/relayq/config"
	"github.com/relayq/relayq/delivery/route"
	"github.com/relayq/relayq/internal/dkim"
	"github.com/relayq/relayq/submission"
)

const dkimUsage = `usage: relayq dkim <command> [flags]

commands:
  keygen --domain D --selector S [--type rsa|ed25519] [--bits 2048] --out FILE
                       write a new private key (mode 0600) and print the DNS
                       TXT record to publish for it
  check [--config FILE]
                       look up each configured key's TXT record and say
                       whether it publishes that key
`

var (
	dkimKeygenHelp = helpOnly("dkim keygen", "dkim keygen --domain D --selector S [--type rsa|ed25519] [--bits 2048] --out FILE",
		"Write a new DKIM private key (mode 0600; the file must not exist) and print the DNS TXT record to publish for it and the dkim.keys entry to add.",
		"  relayq dkim keygen --domain example.org --selector s202611 --out /etc/relayq/dkim/s202611.pem\n  relayq dkim keygen --domain example.org --selector e202611 --type ed25519 --out e202611.pem\n")
	dkimCheckHelp = helpOnly("dkim check", "dkim check [--config FILE]",
		"Look up the DNS TXT record of each key in dkim.keys and say whether it publishes that key; exit 1 when one does not.",
		"  relayq dkim check --config /etc/relayq/relayq.yaml\n")
)

func dkimCmd(args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, dkimUsage)
		return errors.New("dkim: which command?")
	}
	if isHelpWord(args[0]) || args[0] == "-h" {
		fmt.Fprint(out, dkimUsage)
		return nil
	}
	switch args[0] {
	case "keygen":
		return dkimKeygen(args[1:], out)
	case "check":
		return dkimCheck(args[1:], out)
	}
	fmt.Fprint(os.Stderr, dkimUsage)
	return fmt.Errorf("dkim: unknown command %q", args[0])
}

func dkimKeygen(args []string, out io.Writer) error {
	fs := helpFlagSet(dkimKeygenHelp, out)
	domain := fs.String("domain", "", "the signing domain (d=), e.g. example.org")
	selector := fs.String("selector", "", "the selector (s=), e.g. s202611")
	typ := fs.String("type", "rsa", "rsa or ed25519")
	bits := fs.Int("bits", dkim.DefaultRSABits, "RSA key size")
	path := fs.String("out", "", "file to write the private key to (must not exist)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *domain == "" || *selector == "" || *path == "" {
		return errors.New("dkim keygen: --domain, --selector and --out are required")
	}
	k, err := dkim.GenerateKey(dkim.KeyType(*typ), *bits)
	if err != nil {
		return err
	}
	line, err := dkim.ZoneLine(*domain, *selector, k.Public())
	if err != nil {
		return err
	}
	if err := dkim.WriteKeyFile(*path, k); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s (%s)\n\npublish this DNS record:\n\n%s\n\nthen add the key to dkim.keys:\n\n  - {domain: %s, selector: %s, private_key_file: %s}\n",
		*path, *typ, line, *domain, *selector, *path)
	return nil
}

func dkimCheck(args []string, out io.Writer) error {
	fs := helpFlagSet(dkimCheckHelp, out)
	var path string
	defineConfigFile(fs, &path)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("dkim check: unexpected argument %q: give the config file with --config %s", fs.Arg(0), fs.Arg(0))
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	dc, err := dkimConfig(cfg)
	if err != nil {
		return err
	}
	if len(dc.Keys) == 0 {
		fmt.Fprintln(out, "no dkim.keys configured")
		return nil
	}
	var resolver dkim.TXTResolver = net.DefaultResolver
	if r := route.NewRouter(route.Options{DNSServer: cfg.Delivery.DNSServer}).Resolver(); r != nil {
		resolver = r
	}
	failed := 0
	for _, k := range dc.Keys {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := dkim.Check(ctx, resolver, k)
		cancel()
		if err != nil {
			failed++
			fmt.Fprintf(out, "%s: FAIL: %v\n", dkim.RecordName(k.Domain, k.Selector), err)
			continue
		}
		fmt.Fprintf(out, "%s: ok, publishes %s\n", dkim.RecordName(k.Domain, k.Selector), k.File)
	}
	if failed > 0 {
		return fmt.Errorf("dkim check: %d of %d records do not publish their key", failed, len(dc.Keys))
	}
	return nil
}

// dkimConfig loads the configured keys for the signer.
func dkimConfig(cfg *config.Config) (dkim.Config, error) {
	c := dkim.Config{Headers: cfg.DKIM.Headers, Expiration: cfg.DKIM.Expiration}
	for _, k := range cfg.DKIM.Keys {
		s, err := dkim.LoadKey(k.PrivateKeyFile)
		if err != nil {
			return dkim.Config{}, fmt.Errorf("dkim.keys: %w", err)
		}
		c.Keys = append(c.Keys, dkim.Key{Domain: k.Domain, Selector: k.Selector, Signer: s, File: k.PrivateKeyFile})
	}
	return c, nil
}

// messageSigner adapts a dkim.Signer to submission's hook.
func messageSigner(s *dkim.Signer) func(submission.KeyFilter) submission.MessageSigner {
	return func(allow submission.KeyFilter) submission.MessageSigner {
		if !s.Active() {
			return nil // no keys (yet): nothing to sign, nothing to allocate
		}
		return s.BeginWith(dkim.KeyFilter(allow))
	}
}
