package smtptest

import (
	"strings"
	"sync"
)

// ruleSet picks the rule for a command. It counts, per (stage, match), how
// many commands matched, so that Rule.Attempt can script sequences across
// connections.
type ruleSet struct {
	byStage map[Stage][]compiledRule // immutable after newRuleSet
	groups  map[Stage][]string       // distinct lower-cased matches per stage

	mu     sync.Mutex
	counts map[groupKey]int
}

type compiledRule struct {
	Rule
	lower string // Match, lower-cased once
	group int    // index into groups[Stage]
}

type groupKey struct {
	stage Stage
	group int
}

func newRuleSet(rules []Rule) *ruleSet {
	rs := &ruleSet{
		byStage: make(map[Stage][]compiledRule),
		groups:  make(map[Stage][]string),
		counts:  make(map[groupKey]int),
	}
	for _, r := range rules {
		lower := strings.ToLower(r.Match)
		g := -1
		for i, m := range rs.groups[r.Stage] {
			if m == lower {
				g = i
			}
		}
		if g < 0 {
			g = len(rs.groups[r.Stage])
			rs.groups[r.Stage] = append(rs.groups[r.Stage], lower)
		}
		rs.byStage[r.Stage] = append(rs.byStage[r.Stage], compiledRule{Rule: r, lower: lower, group: g})
	}
	return rs
}

// decide counts this command against every match it satisfies and returns
// the first rule that applies, if any.
func (rs *ruleSet) decide(stage Stage, args ...string) (Rule, bool) {
	rules := rs.byStage[stage]
	if len(rules) == 0 {
		return Rule{}, false // the hot path without rules takes no lock
	}
	lowered := lowerAll(args)
	groups := rs.groups[stage]
	attempt := make([]int, len(groups))
	rs.mu.Lock()
	for g, m := range groups {
		if matchesAny(m, lowered) {
			k := groupKey{stage, g}
			rs.counts[k]++
			attempt[g] = rs.counts[k]
		}
	}
	rs.mu.Unlock()
	for _, r := range rules {
		if attempt[r.group] == 0 {
			continue // the match did not apply to this command
		}
		if r.Attempt == 0 || r.Attempt == attempt[r.group] {
			return r.Rule, true
		}
	}
	return Rule{}, false
}

// matchesAny reports whether the lower-cased match applies to any arg: as a
// substring, or as a whole-argument pattern when it contains '*' (which
// stands for any run of characters, so "*@gmail.test" is the domain). An
// empty match matches every command, even one without arguments.
func matchesAny(match string, args []string) bool {
	if match == "" {
		return true
	}
	glob := strings.Contains(match, "*")
	for _, a := range args {
		if glob && matchGlob(match, a) || !glob && strings.Contains(a, match) {
			return true
		}
	}
	return false
}

// matchGlob reports whether s matches pattern, where '*' is any run of
// characters and every other character stands for itself.
func matchGlob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := len(parts) - 1
	for _, p := range parts[1:last] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[last])
}

// lowerAll returns args lower-cased.
func lowerAll(args []string) []string {
	lowered := make([]string, len(args))
	for i, a := range args {
		lowered[i] = strings.ToLower(a)
	}
	return lowered
}
