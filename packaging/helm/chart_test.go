// Package helm tests the Helm chart in packaging/helm/relayq: it renders
// the chart with a real helm (helm.sh/helm/v4, which .ci/run builds
// through the Go module proxy), parses what it renders as YAML and loads
// the rendered relayq.yaml as `relayq check-config` does.
package helm

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/relayq/relayq/config"
)

// findHelm returns the helm command (HELM_BIN, else helm on PATH; not RELAYQ_: config.Load would take it for a setting), or
// skips when there is none and CI is unset (.ci/run builds helm v4 and
// puts it on PATH, so in CI it is a failure).
func findHelm(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM_BIN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no helm on PATH, but CI is set: .ci/run should have built it (go install helm.sh/helm/v4/cmd/helm@v4.3.2)")
	}
	t.Skip("no helm on PATH: `GOBIN=/tmp/helm go install helm.sh/helm/v4/cmd/helm@v4.3.2` and set HELM_BIN=/tmp/helm/helm to render the chart (set CI to make this a failure)")
	return ""
}

// render runs helm template on the chart with the --set values given and
// returns its documents by kind and name, or helm's error output.
func render(t *testing.T, set ...string) (map[string]map[string]any, string) {
	t.Helper()
	args := []string{"template", "t", "relayq", "--namespace", "mail"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(findHelm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, stderr.String()
	}
	docs := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("helm's output is not YAML: %v\n%s", err, out)
		}
		if d == nil {
			continue
		}
		docs[d["kind"].(string)+"/"+dig(t, d, "metadata", "name").(string)] = d
	}
	return docs, ""
}

// dig walks maps by key and lists by index ("0").
func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := int(p[0] - '0')
			if len(p) != 1 || i >= len(x) {
				t.Fatalf("no element %s in %v", p, x)
			}
			v = x[i]
		default:
			t.Fatalf("no %q in %v (at %v)", p, v, path)
		}
	}
	return v
}

// loadConfig loads the ConfigMap's relayq.yaml as check-config does, in
// the environment the StatefulSet gives relayq (a secret's variable set to
// a stand-in): relayq refuses a RELAYQ_ variable that is no setting.
func loadConfig(t *testing.T, docs map[string]map[string]any) *config.Config {
	t.Helper()
	c := dig(t, docs["StatefulSet/t-relayq"], "spec", "template", "spec", "containers", "0")
	for _, e := range dig(t, c, "env").([]any) {
		m := e.(map[string]any)
		v, ok := m["value"].(string)
		if !ok {
			v = "stand-in-for-a-secret-or-field-000000"
		}
		t.Setenv(m["name"].(string), v)
	}
	text := dig(t, docs["ConfigMap/t-relayq"], "data", "relayq.yaml").(string)
	path := filepath.Join(t.TempDir(), "relayq.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("check-config refuses the rendered relayq.yaml: %v\n%s", err, text)
	}
	for _, w := range config.Warnings(cfg) {
		t.Logf("check-config warns: %s", w)
	}
	return cfg
}

// The defaults: a StatefulSet of three nodes, one queue volume each,
// ready on /readyz, drained by the preStop hook to the in-cluster SMTP
// Service with a grace period that fits the drain and the stop, Redis as
// a subchart, and a relayq.yaml that loads.
func TestChartDefaults(t *testing.T) {
	docs, errs := render(t)
	if docs == nil {
		t.Fatalf("helm template: %s", errs)
	}
	sts := docs["StatefulSet/t-relayq"]
	if sts == nil {
		t.Fatalf("no StatefulSet t-relayq among %v", keys(docs))
	}
	if got := dig(t, sts, "spec", "replicas"); got != 3 {
		t.Errorf("replicas = %v, want 3", got)
	}
	if got := dig(t, sts, "spec", "volumeClaimTemplates", "0", "metadata", "name"); got != "queue" {
		t.Errorf("volumeClaimTemplates[0] = %v, want the queue's", got)
	}
	pod := dig(t, sts, "spec", "template", "spec")
	c := dig(t, pod, "containers", "0")
	if got := dig(t, c, "readinessProbe", "httpGet", "path"); got != "/readyz" {
		t.Errorf("readiness probe on %v, want /readyz", got)
	}
	mounted := false
	for _, m := range dig(t, c, "volumeMounts").([]any) {
		mm := m.(map[string]any)
		mounted = mounted || mm["name"] == "queue" && mm["mountPath"] == "/var/lib/relayq"
	}
	if !mounted {
		t.Error("the queue volume is not mounted at /var/lib/relayq")
	}
	cmd := strings.Join(strs(dig(t, c, "lifecycle", "preStop", "exec", "command").([]any)), " ")
	if cmd != "/usr/local/bin/relayq queue drain --config /etc/relayq/relayq.yaml --to $(DRAIN_TO)" {
		t.Errorf("preStop runs %q, want relayq's drain", cmd)
	}
	if got := envValue(t, c, "DRAIN_TO"); got != "t-relayq-internal.mail.svc:2525" {
		t.Errorf("the drain goes to %q, want the in-cluster SMTP Service", got)
	}
	if got := dig(t, pod, "terminationGracePeriodSeconds"); got != 340 {
		t.Errorf("terminationGracePeriodSeconds = %v, want 300 (drain) + 30 (shutdown_timeout) + 10", got)
	}
	if docs["StatefulSet/t-redis"] == nil || docs["Service/t-redis"] == nil {
		t.Errorf("no Redis subchart rendered: %v", keys(docs))
	}
	cfg := loadConfig(t, docs)
	if cfg.Queue.Path != "/var/lib/relayq/queue.db" || cfg.Cluster.RedisURL != "redis://t-redis:6379/0" || cfg.Cluster.ExpectedNodes != 3 {
		t.Errorf("relayq.yaml: queue %q, redis %q, expected_nodes %d", cfg.Queue.Path, cfg.Cluster.RedisURL, cfg.Cluster.ExpectedNodes)
	}
	if len(cfg.Submission.ProxyProtocol.Trusted) != 0 {
		t.Errorf("PROXY protocol on by default: %v", cfg.Submission.ProxyProtocol.Trusted)
	}
}

// Behind a balancer sending PROXY headers: the trusted networks reach
// relayq.yaml for every listener group, and a drain, which in-cluster
// connections could no longer make, must be given the balancer's address.
func TestChartProxyProtocol(t *testing.T) {
	set := []string{"proxyProtocol.trusted={10.0.5.0/24}", "proxyProtocol.bouncesTrusted={10.0.6.0/24}",
		"bounces.enabled=true", "httpSubmission.enabled=true", "config.bounces.domain=bounces.example.org"}
	if docs, errs := render(t, set...); docs != nil || !strings.Contains(errs, "drain.to is required with proxyProtocol.trusted set") {
		t.Fatalf("without drain.to: rendered=%v, errors %q; want the chart to refuse", docs != nil, errs)
	}
	docs, errs := render(t, append(set, "drain.to=smtp.example.org:25")...)
	if docs == nil {
		t.Fatalf("helm template: %s", errs)
	}
	cfg := loadConfig(t, docs)
	want := []netip.Prefix{netip.MustParsePrefix("10.0.5.0/24")}
	if !slices.Equal(cfg.Submission.ProxyProtocol.Trusted, want) || cfg.Submission.HTTPListen != "0.0.0.0:8587" {
		t.Errorf("submission: proxy_protocol.trusted %v, http_listen %q", cfg.Submission.ProxyProtocol.Trusted, cfg.Submission.HTTPListen)
	}
	if got := cfg.Bounces.ProxyProtocol.Trusted; !slices.Equal(got, []netip.Prefix{netip.MustParsePrefix("10.0.6.0/24")}) {
		t.Errorf("bounces.proxy_protocol.trusted = %v", got)
	}
	if docs["Service/t-relayq-bounces"] == nil {
		t.Errorf("no bounces Service: %v", keys(docs))
	}
}

// drain.mode onStop leaves the drain to relayq's SIGTERM
// (cluster.drain_on_stop) and has no preStop hook; off has neither, and
// the grace period is the stop's alone. An external Redis needs its URL.
func TestChartDrainModesAndRedis(t *testing.T) {
	docs, errs := render(t, "drain.mode=onStop")
	if docs == nil {
		t.Fatalf("helm template: %s", errs)
	}
	c := dig(t, docs["StatefulSet/t-relayq"], "spec", "template", "spec", "containers", "0")
	if _, ok := c.(map[string]any)["lifecycle"]; ok {
		t.Error("onStop still has a preStop hook")
	}
	if text := dig(t, docs["ConfigMap/t-relayq"], "data", "relayq.yaml").(string); !strings.Contains(text, "drain_on_stop: true") {
		t.Errorf("onStop does not set cluster.drain_on_stop:\n%s", text)
	}
	if cfg := loadConfig(t, docs); !cfg.Cluster.DrainOnStop || cfg.Cluster.DrainTo == "" {
		t.Errorf("onStop: the relay would not drain on SIGTERM (drain_on_stop %v, drain_to %q)", cfg.Cluster.DrainOnStop, cfg.Cluster.DrainTo)
	}
	docs, errs = render(t, "drain.mode=off", "redis.enabled=false", "redis.url=redis://10.0.0.9:6379/0")
	if docs == nil {
		t.Fatalf("helm template: %s", errs)
	}
	if got := dig(t, docs["StatefulSet/t-relayq"], "spec", "template", "spec", "terminationGracePeriodSeconds"); got != 40 {
		t.Errorf("off: terminationGracePeriodSeconds = %v, want 30 + 10", got)
	}
	if docs["StatefulSet/t-redis"] != nil {
		t.Error("redis.enabled=false still renders the Redis subchart")
	}
	if got := loadConfig(t, docs).Cluster.RedisURL; got != "redis://10.0.0.9:6379/0" {
		t.Errorf("redis_url = %q", got)
	}
	for _, tc := range []struct{ set, want string }{
		{"redis.enabled=false", "redis.url is required"},
		{"drain.mode=sometimes", `drain.mode "sometimes": use preStop, onStop or off`},
	} {
		if docs, errs := render(t, tc.set); docs != nil || !strings.Contains(errs, tc.want) {
			t.Errorf("--set %s: rendered=%v, errors %q; want %q", tc.set, docs != nil, errs, tc.want)
		}
	}
}

func envValue(t *testing.T, container any, name string) string {
	t.Helper()
	for _, e := range dig(t, container, "env").([]any) {
		if m := e.(map[string]any); m["name"] == name {
			s, _ := m["value"].(string)
			return s
		}
	}
	return ""
}

func strs(l []any) []string {
	out := make([]string, len(l))
	for i, v := range l {
		out[i], _ = v.(string)
	}
	return out
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
