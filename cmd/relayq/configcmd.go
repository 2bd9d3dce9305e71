package main

// `relayq check-config` and `relayq config show`.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/relayq/relayq/config"
)

// configFlag parses the flags of serve, check-config and config show: the
// config file comes only from --config. A positional argument used to be
// ignored silently, so that `relayq serve relayq.yaml` ran the defaults.
func configFlag(name string, args []string, out io.Writer, more func(*flag.FlagSet)) (string, error) {
	fs := newFlagSet(name, out)
	var path string
	defineConfigFile(fs, &path)
	if more != nil {
		more(fs)
	}
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("%s: unexpected argument %q: give the config file with --config %s", name, fs.Arg(0), fs.Arg(0))
	}
	return path, nil
}

// defineConfigFile is --config, for every command that reads relayq.yaml.
func defineConfigFile(fs *flag.FlagSet, v *string) {
	fs.StringVar(v, "config", "", "YAML config file (default: embedded defaults)")
}

func checkConfig(args []string, out io.Writer) error {
	var strict bool
	path, err := configFlag("check-config", args, out, func(fs *flag.FlagSet) {
		fs.BoolVar(&strict, "strict", false, "fail on warnings too")
	})
	if err != nil {
		return err
	}
	c, err := config.Load(path)
	if err != nil {
		return err
	}
	ws := config.Warnings(c)
	for _, w := range ws {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	if strict && len(ws) > 0 {
		return fmt.Errorf("%s: %d %s (--strict)", cfgName(path), len(ws), pluralize(len(ws), "warning", "warnings"))
	}
	if len(ws) > 0 {
		fmt.Fprintf(out, "%s: ok, with %d %s\n", cfgName(path), len(ws), pluralize(len(ws), "warning", "warnings"))
		return nil
	}
	fmt.Fprintf(out, "%s: ok\n", cfgName(path))
	return nil
}

// configCmd runs `relayq config show [KEY...]`.
func configCmd(args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "show" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			c, _ := lookup("config")
			writeHelp(out, c, nil)
			return nil
		}
		return errors.New("config: want `relayq config show [--config FILE] [--changed] [KEY...]`")
	}
	fs := newFlagSet("config", out)
	var path string
	var changed bool
	defineConfigFile(fs, &path)
	fs.BoolVar(&changed, "changed", false, "only keys set by the file or the environment")
	keys, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	_, set, err := config.LoadSettings(path)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return writeSettings(out, cfgName(path), set, changed)
	}
	return writeKeys(out, set, keys)
}

// writeKeys prints the keys asked for as postconf does, `key = value`; a
// section (retry) stands for every key under it. An unknown key is an
// error naming the closest known one, and nothing is printed.
func writeKeys(out io.Writer, set []config.Setting, keys []string) error {
	var lines []string
	for _, k := range keys {
		n := len(lines)
		for _, s := range set {
			if s.Key == k || strings.HasPrefix(s.Key, k+".") {
				lines = append(lines, s.Key+" = "+strings.ReplaceAll(s.Shown(), "\n", " "))
			}
		}
		if len(lines) == n {
			msg := fmt.Sprintf("config show: unknown key %q", k)
			if near := config.SuggestKey(k, set); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			return errors.New(msg)
		}
	}
	_, err := fmt.Fprintln(out, strings.Join(lines, "\n"))
	return err
}

// writeSettings prints `key = value  # source`, aligned.
func writeSettings(out io.Writer, name string, set []config.Setting, changed bool) error {
	fmt.Fprintf(out, "# effective configuration: %s, then RELAYQ_* environment\n", name)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, s := range set {
		if changed && s.Source == config.SourceDefault {
			continue
		}
		fmt.Fprintf(tw, "%s = %s\t# %s\n", s.Key, strings.ReplaceAll(s.Shown(), "\n", " "), s.Source)
	}
	return tw.Flush()
}
