package docs

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/relayq/relayq"

// rule is one row of design.md's import table.
type rule struct {
	relayq  []string // relayq packages it may import; "*" is any
	outside []string // outside module paths it may import; "*" is any
}

var ticked = regexp.MustCompile("`([^`]+)`")

// readRules parses the table between the import-rules markers of design.md.
func readRules(t *testing.T) map[string]rule {
	t.Helper()
	f, err := os.Open("design.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules := map[string]rule{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "<!-- import rules: begin -->":
			in = true
		case line == "<!-- import rules: end -->":
			return rules
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 3 {
				t.Fatalf("design.md: import rule row %q does not have 3 cells", line)
			}
			pkg := ticked.FindStringSubmatch(cells[0])
			if pkg == nil {
				t.Fatalf("design.md: import rule row %q names no package", line)
			}
			rules[pkg[1]] = rule{relayq: listed(cells[1]), outside: listed(cells[2])}
		}
	}
	t.Fatal("design.md: no import rules table between the markers")
	return nil
}

// listed returns the backticked names in a cell, or ["*"].
func listed(cell string) []string {
	if strings.TrimSpace(cell) == "*" {
		return []string{"*"}
	}
	var out []string
	for _, m := range ticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// pkgInfo is what go list says of one package.
type pkgInfo struct {
	imports, deps []string
}

// listPackages runs go list -deps style queries over the whole module.
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, msg)
	}
	pkgs := map[string]pkgInfo{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list: odd line %q", line)
		}
		pkgs[strings.TrimPrefix(f[0], module+"/")] = pkgInfo{imports: strings.Fields(f[1]), deps: strings.Fields(f[2])}
	}
	return pkgs
}

// closure is every relayq package pkg may reach under rules, itself included.
func closure(rules map[string]rule, pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, q := range rules[p].relayq {
			walk(q)
		}
	}
	walk(pkg)
	return seen
}

// outsideModule reports whether path is outside relayq and the standard
// library (its first element has a dot).
func outsideModule(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return strings.Contains(first, ".") && path != module && !strings.HasPrefix(path, module+"/")
}

func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	rules := readRules(t)
	pkgs := listPackages(t)
	for name := range rules {
		if _, ok := pkgs[name]; !ok {
			t.Errorf("design.md has an import rule for %s, which is not a package of the module", name)
		}
	}
	for name, p := range pkgs {
		r, ok := rules[name]
		if !ok {
			t.Errorf("package %s has no row in design.md's import rules table: add one", name)
			continue
		}
		if !slices.Contains(r.relayq, "*") {
			allowed := closure(rules, name)
			for _, d := range p.deps {
				if !strings.HasPrefix(d, module+"/") {
					continue
				}
				if d = strings.TrimPrefix(d, module+"/"); !allowed[d] {
					t.Errorf("%s depends on %s, which design.md's import rules do not allow", name, d)
				}
			}
		}
		if slices.Contains(r.outside, "*") {
			continue
		}
		for _, imp := range p.imports {
			if outsideModule(imp) && !slices.ContainsFunc(r.outside, func(m string) bool { return imp == m || strings.HasPrefix(imp, m+"/") }) {
				t.Errorf("%s imports %s, which design.md's import rules do not list", name, imp)
			}
		}
	}
}

// A row must not allow what its package does not use: an allowance nobody
// takes is a claim about the code that is no longer true, and it lets the
// next import in without a review of the table. Each relayq package and each
// outside module a row lists must be imported by a non-test file of that
// package (go list's Imports leaves test files out).
func TestImportRulesAreUsed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	for _, msg := range unusedAllowances(readRules(t), listPackages(t)) {
		t.Error(msg)
	}
}

// unusedAllowances names, row by row, each import a row allows and no
// non-test file of its package makes. Rows of packages go list does not know
// are TestImportRules's to report.
func unusedAllowances(rules map[string]rule, pkgs map[string]pkgInfo) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		p, ok := pkgs[name]
		if !ok {
			continue
		}
		r := rules[name]
		for _, q := range r.relayq {
			if q != "*" && !slices.Contains(p.imports, module+"/"+q) {
				out = append(out, fmt.Sprintf("design.md's row for %s allows %s, which no non-test file of %s imports: remove it from the row", name, q, name))
			}
		}
		for _, m := range r.outside {
			if m != "*" && !slices.ContainsFunc(p.imports, func(imp string) bool { return imp == m || strings.HasPrefix(imp, m+"/") }) {
				out = append(out, fmt.Sprintf("design.md's row for %s allows %s, which no non-test file of %s imports: remove it from the row", name, m, name))
			}
		}
	}
	return out
}

func TestUnusedAllowancesFound(t *testing.T) {
	rules := map[string]rule{
		"a":    {relayq: []string{"b", "c"}, outside: []string{"example.org/used", "example.org/unused"}},
		"b":    {relayq: []string{"*"}, outside: []string{"*"}},
		"c":    {},
		"gone": {relayq: []string{"a"}},
	}
	pkgs := map[string]pkgInfo{
		"a": {imports: []string{"fmt", module + "/b", "example.org/used/sub"}},
		"b": {},
		"c": {},
	}
	got := unusedAllowances(rules, pkgs)
	want := []string{
		"design.md's row for a allows c, which no non-test file of a imports: remove it from the row",
		"design.md's row for a allows example.org/unused, which no non-test file of a imports: remove it from the row",
	}
	if !slices.Equal(got, want) {
		t.Errorf("unusedAllowances:\n got %q\nwant %q", got, want)
	}
}

// The rule that matters most to the package split: the SMTP client knows
// nothing of the queue or the engine.
func TestSMTPClientImportsNeitherQueueNorEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	p, ok := listPackages(t)["delivery/smtpclient"]
	if !ok {
		t.Fatal("no smtpclient package")
	}
	for _, d := range p.deps {
		if d == module+"/queue" || d == module+"/delivery" {
			t.Errorf("smtpclient depends on %s", d)
		}
	}
}
