package persona

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"
)

//go:embed personas.yaml
var builtinYAML []byte

// Kind is what a check looks at.
type Kind string

// The kinds of check (see personas.yaml for their fields).
const (
	KindRate     Kind = "rate"
	KindConns    Kind = "conns"
	KindUnknown  Kind = "unknown"
	KindUnsigned Kind = "unsigned"
	KindGreylist Kind = "greylist"
	KindFlaky    Kind = "flaky"
	KindTarpit   Kind = "tarpit"
	// The bulk-sender checks (bulk.go).
	KindUnaligned Kind = "unaligned"
	KindOneClick  Kind = "oneclick"
	KindPTR       Kind = "ptr"
)

// Stage is where a check applies; the names are smtptest's.
type Stage string

// Stages a check may apply at.
const (
	StageGreeting Stage = "greeting"
	StageMail     Stage = "mail"
	StageRcpt     Stage = "rcpt"
	StageData     Stage = "data"
)

// Def is one persona as the file writes it.
type Def struct {
	Source string            `yaml:"source"`
	Params map[string]string `yaml:"params"`
	Checks []CheckDef        `yaml:"checks"`
}

// CheckDef is one check as the file writes it: every field but kind and
// stage may be "{param}", filled in from the persona's params.
type CheckDef struct {
	Kind  Kind   `yaml:"kind"`
	Stage Stage  `yaml:"stage"`
	Reply string `yaml:"reply"`
	// Fields is the kind's own settings: limit, cooldown, match, when,
	// delay, fraction, seed.
	Fields map[string]string `yaml:",inline"`
}

// Catalog is the personas known by name.
type Catalog map[string]Def

// kindFields lists the fields each kind takes and which are required.
var kindFields = map[Kind][]string{
	KindRate:      {"limit", "cooldown?"},
	KindConns:     {"limit"},
	KindUnknown:   {"match"},
	KindUnsigned:  {"when"},
	KindGreylist:  {"delay"},
	KindFlaky:     {"fraction", "seed"},
	KindTarpit:    {"delay"},
	KindUnaligned: {"when", "bulk?"},
	KindOneClick:  {"when", "bulk?"},
	KindPTR:       {"when"},
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Builtin returns the embedded personas.
func Builtin() Catalog {
	c, err := Parse(builtinYAML)
	if err != nil {
		panic("persona: embedded personas.yaml: " + err.Error()) // fixed at build time, tested
	}
	return c
}

// BuiltinYAML is the embedded file, for tests that read the texts from it.
func BuiltinYAML() []byte { return bytes.Clone(builtinYAML) }

// Parse reads a personas file and checks every persona in it: that its
// checks have known kinds, stages and fields, and that its defaults make
// an instance.
func Parse(data []byte) (Catalog, error) {
	var c Catalog
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("personas file: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if !nameRE.MatchString(name) {
			return nil, fmt.Errorf("persona %q: a name is lower-case letters, digits and '-'", name)
		}
		if len(c[name].Checks) == 0 {
			return nil, fmt.Errorf("persona %q: no checks", name)
		}
		if _, err := c.New(name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Merge returns c with the personas of other added, replacing those of
// the same name.
func (c Catalog) Merge(other Catalog) Catalog {
	out := maps.Clone(c)
	maps.Copy(out, other)
	return out
}
