package kubernetes_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/ociimage"
)

// objects are the manifests' objects by kind, then name.
type objects struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	secrets     map[string]*corev1.Secret
	pdbs        map[string]*policyv1.PodDisruptionBudget
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// load decodes every document of every manifest strictly: an unknown or
// misspelt field, a duplicate key or a wrong type fails.
func load(t *testing.T) *objects {
	t.Helper()
	o := &objects{
		deployments: map[string]*appsv1.Deployment{},
		services:    map[string]*corev1.Service{},
		secrets:     map[string]*corev1.Secret{},
		pdbs:        map[string]*policyv1.PodDisruptionBudget{},
	}
	files := []string{"agent.yaml", "serve.yaml", "secrets.example.yaml"}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range docSep.Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			var into any
			var name func() string
			switch meta.APIVersion + " " + meta.Kind {
			case "apps/v1 Deployment":
				d := &appsv1.Deployment{}
				into, name = d, func() string { o.deployments[d.Name] = d; return d.Name }
			case "v1 Service":
				s := &corev1.Service{}
				into, name = s, func() string { o.services[s.Name] = s; return s.Name }
			case "v1 Secret":
				s := &corev1.Secret{}
				into, name = s, func() string { o.secrets[s.Name] = s; return s.Name }
			case "policy/v1 PodDisruptionBudget":
				p := &policyv1.PodDisruptionBudget{}
				into, name = p, func() string { o.pdbs[p.Name] = p; return p.Name }
			default:
				t.Fatalf("%s, document %d: %s %s: not a kind this test knows; add it", f, i+1, meta.APIVersion, meta.Kind)
			}
			if err := strict([]byte(doc), into); err != nil {
				t.Fatalf("%s, document %d (%s): %v", f, i+1, meta.Kind, err)
			}
			if name() == "" {
				t.Errorf("%s, document %d: %s without a name", f, i+1, meta.Kind)
			}
		}
	}
	return o
}

// strict decodes YAML into a Kubernetes type as the API server does,
// only stricter: field names are case-sensitive (encoding/json would take
// readOnlyRootFileSystem for readOnlyRootFilesystem), and an unknown or
// duplicate field is an error rather than dropped.
func strict(doc []byte, into any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(j, into)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

func stripComments(doc string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// matches says whether a selector's labels are all among labels.
func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name || a == "-"+name {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// port finds a container port by a probe's or Service's reference (a name
// or a number).
func port(c *corev1.Container, ref intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, p := range c.Ports {
		if ref.Type == intstr.String && p.Name == ref.StrVal || ref.Type == intstr.Int && p.ContainerPort == ref.IntVal {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

func env(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// mounted says whether path is on one of the container's volume mounts
// (so writable while the root file system is read-only).
func mounted(c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly && (path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")) {
			return true
		}
	}
	return false
}

func only(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("deployment %s: %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	return &d.Spec.Template.Spec.Containers[0]
}

func TestManifests(t *testing.T) {
	o := load(t)
	agent, serve := o.deployments["tether-agent"], o.deployments["tether-serve"]
	if agent == nil || serve == nil {
		t.Fatalf("deployments %v, want tether-agent and tether-serve", keys(o.deployments))
	}

	for _, d := range []*appsv1.Deployment{agent, serve} {
		t.Run(d.Name, func(t *testing.T) {
			c := only(t, d)
			pod := &d.Spec.Template
			// scripts/build-image.sh tags the image with the release
			// (tether version), so the manifests name this release's.
			if want := "tether:" + claude.Version; c.Image != want {
				t.Errorf("image %q, want %q (this release's, as scripts/build-image.sh tags it)", c.Image, want)
			}
			if d.Spec.Selector == nil || !matches(d.Spec.Selector.MatchLabels, pod.Labels) {
				t.Errorf("selector %v does not match the pod labels %v", d.Spec.Selector, pod.Labels)
			}
			psc := pod.Spec.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != ociimage.UID {
				t.Errorf("pod securityContext %+v: want runAsNonRoot and runAsUser %d (the image's user)", psc, ociimage.UID)
			}
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, capabilities dropped", sc)
			}
			vols := map[string]corev1.Volume{}
			for _, v := range pod.Spec.Volumes {
				vols[v.Name] = v
			}
			for _, m := range c.VolumeMounts {
				if _, ok := vols[m.Name]; !ok {
					t.Errorf("volumeMount %s: no such volume", m.Name)
				}
			}
			home := env(c, "HOME")
			if home == nil || home.Value != ociimage.Home || !mounted(c, home.Value) {
				t.Errorf("HOME %+v: want %s on a writable volume (the root file system is read-only)", home, ociimage.Home)
			}
			if !mounted(c, "/tmp") {
				t.Error("/tmp is not a writable volume")
			}
			if len(c.Args) == 0 || c.Args[0] != strings.TrimPrefix(d.Name, "tether-") {
				t.Errorf("args %q: want the %s command first (the image's entrypoint is tether)", c.Args, strings.TrimPrefix(d.Name, "tether-"))
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[r]; !ok {
					t.Errorf("no %s request", r)
				}
				if _, ok := c.Resources.Limits[r]; !ok {
					t.Errorf("no %s limit", r)
				}
			}
			// Secrets: every reference names a key of secrets.example.yaml.
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					if u := strings.ToUpper(e.Name); strings.Contains(u, "PASSWORD") || strings.Contains(u, "TOKEN") || strings.Contains(u, "KEY") {
						t.Errorf("env %s: a secret as a plain value; use a secretKeyRef", e.Name)
					}
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				s := o.secrets[ref.Name]
				if s == nil {
					t.Errorf("env %s: no Secret %s", e.Name, ref.Name)
				} else if _, ok := s.StringData[ref.Key]; !ok {
					t.Errorf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
				}
			}
			for _, v := range pod.Spec.Volumes {
				if v.Secret != nil && o.secrets[v.Secret.SecretName] == nil {
					t.Errorf("volume %s: no Secret %s", v.Name, v.Secret.SecretName)
				}
			}
			checkProbes(t, c, d.Name)
		})
	}

	t.Run("agent", func(t *testing.T) {
		c := only(t, agent)
		addr, _ := flagValue(c.Args, "http-addr")
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("--http-addr %q: %v", addr, err)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
			t.Errorf("--http-addr %s: loopback, where the kubelet's probes and Prometheus cannot reach it", addr)
		}
		if p != "9464" {
			t.Errorf("--http-addr port %s, want 9464", p)
		}
		if pp, ok := port(c, c.ReadinessProbe.HTTPGet.Port); !ok || strconv.Itoa(int(pp.ContainerPort)) != p {
			t.Errorf("the probes' port %v is not --http-addr's %s", c.ReadinessProbe.HTTPGet.Port, p)
		}
		drain := 5 * time.Minute
		if v, ok := flagValue(c.Args, "drain-timeout"); ok {
			if drain, err = time.ParseDuration(v); err != nil {
				t.Fatalf("--drain-timeout %q: %v", v, err)
			}
		}
		grace := agent.Spec.Template.Spec.TerminationGracePeriodSeconds
		if grace == nil || time.Duration(*grace)*time.Second <= drain {
			t.Errorf("terminationGracePeriodSeconds %s is not longer than the drain timeout %v: the kubelet would kill the turns the drain waits for", fmtPtr(grace), drain)
		}
		if cwd, _ := flagValue(c.Args, "cwd"); cwd == "" || !mounted(c, cwd) {
			t.Errorf("--cwd %q: want the workspaces root on a writable volume", cwd)
		}
		// Sizing: ~250 MiB a session requested, ~512 MiB a session at most
		// (docs/operations.md), so capacity and resources change together.
		capStr, _ := flagValue(c.Args, "capacity")
		capacity, err := strconv.Atoi(capStr)
		if err != nil || capacity < 1 {
			t.Fatalf("--capacity %q", capStr)
		}
		req, lim := c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory]
		if want := resource.MustParse(fmt.Sprintf("%dMi", capacity*250)); req.Cmp(want) < 0 {
			t.Errorf("memory request %s < %s (capacity %d × 250 MiB)", req.String(), want.String(), capacity)
		}
		if want := resource.MustParse(fmt.Sprintf("%dMi", capacity*512)); lim.Cmp(want) < 0 {
			t.Errorf("memory limit %s < %s (capacity %d × 512 MiB)", lim.String(), want.String(), capacity)
		}
		if s := agent.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable == nil || s.MaxUnavailable.IntValue() != 0 {
			t.Errorf("rolling update %+v: want maxUnavailable 0 (a new agent before an old one drains)", s)
		}

		// The PDB covers the agents and nothing else.
		pdb := o.pdbs["tether-agent"]
		if pdb == nil {
			t.Fatalf("no PodDisruptionBudget tether-agent (have %v)", keys(o.pdbs))
		}
		if pdb.Spec.Selector == nil || !matches(pdb.Spec.Selector.MatchLabels, agent.Spec.Template.Labels) {
			t.Errorf("PDB selector %v does not match the agent pods %v", pdb.Spec.Selector, agent.Spec.Template.Labels)
		}
		if matches(pdb.Spec.Selector.MatchLabels, serve.Spec.Template.Labels) {
			t.Errorf("PDB selector %v matches the serve pods too", pdb.Spec.Selector)
		}
		if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
			t.Error("PDB sets neither maxUnavailable nor minAvailable")
		}
	})

	t.Run("serve", func(t *testing.T) {
		c := only(t, serve)
		addr, _ := flagValue(c.Args, "addr")
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("--addr %q: %v", addr, err)
		}
		if p != "7878" {
			t.Errorf("--addr port %s, want 7878", p)
		}
		if pp, ok := port(c, c.LivenessProbe.HTTPGet.Port); !ok || strconv.Itoa(int(pp.ContainerPort)) != p {
			t.Errorf("the probes' port %v is not --addr's %s", c.LivenessProbe.HTTPGet.Port, p)
		}
		_, tls := flagValue(c.Args, "tls-cert")
		for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if tls != (pr.HTTPGet.Scheme == corev1.URISchemeHTTPS) {
				t.Errorf("probe scheme %q with --tls-cert given: %v", pr.HTTPGet.Scheme, tls)
			}
		}
		if tls {
			cert, _ := flagValue(c.Args, "tls-cert")
			key, _ := flagValue(c.Args, "tls-key")
			checkTLSMount(t, o, serve, c, cert, key)
		}
		svc := o.services["tether-serve"]
		if svc == nil {
			t.Fatalf("no Service tether-serve (have %v)", keys(o.services))
		}
		if !matches(svc.Spec.Selector, serve.Spec.Template.Labels) {
			t.Errorf("Service selector %v does not match the serve pods %v", svc.Spec.Selector, serve.Spec.Template.Labels)
		}
		if matches(svc.Spec.Selector, agent.Spec.Template.Labels) {
			t.Errorf("Service selector %v matches the agent pods too", svc.Spec.Selector)
		}
		for _, sp := range svc.Spec.Ports {
			if cp, ok := port(c, sp.TargetPort); !ok || strconv.Itoa(int(cp.ContainerPort)) != p {
				t.Errorf("Service port %s: targetPort %v is not serve's port %s", sp.Name, sp.TargetPort, p)
			}
		}
	})
}

func checkProbes(t *testing.T, c *corev1.Container, name string) {
	t.Helper()
	for _, pr := range []struct {
		probe *corev1.Probe
		what  string
		path  string
	}{{c.LivenessProbe, "liveness", "/healthz"}, {c.ReadinessProbe, "readiness", "/readyz"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", name, pr.what)
			continue
		}
		if pr.probe.HTTPGet.Path != pr.path {
			t.Errorf("%s: %s probe on %s, want %s", name, pr.what, pr.probe.HTTPGet.Path, pr.path)
		}
		if _, ok := port(c, pr.probe.HTTPGet.Port); !ok {
			t.Errorf("%s: %s probe port %v is not a port of the container", name, pr.what, pr.probe.HTTPGet.Port)
		}
	}
}

// checkTLSMount: --tls-cert and --tls-key are files of a mounted Secret
// that has those keys.
func checkTLSMount(t *testing.T, o *objects, d *appsv1.Deployment, c *corev1.Container, files ...string) {
	t.Helper()
	for _, f := range files {
		found := false
		for _, m := range c.VolumeMounts {
			if filepath.Dir(f) != m.MountPath {
				continue
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					s := o.secrets[v.Secret.SecretName]
					if _, ok := s.StringData[filepath.Base(f)]; ok {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("%s is not a key of a Secret mounted at %s", f, filepath.Dir(f))
		}
	}
}

func fmtPtr(p *int64) string {
	if p == nil {
		return "unset (30s)"
	}
	return strconv.FormatInt(*p, 10) + "s"
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestNATSValues checks the keys of the NATS chart's values that Tether
// relies on: a 3-server cluster, JetStream on file storage with a volume,
// the users serve and the agents log in as, their passwords from the
// Secret.
func TestNATSValues(t *testing.T) {
	b, err := os.ReadFile("nats-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := strict(b, &v); err != nil {
		t.Fatal(err)
	}
	get := func(path string) any {
		var cur any = v
		for _, k := range strings.Split(path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		}
		return cur
	}
	for path, want := range map[string]any{
		"config.cluster.enabled":                                          true,
		"config.cluster.replicas":                                         int64(3),
		"config.jetstream.enabled":                                        true,
		"config.jetstream.fileStore.enabled":                              true,
		"config.jetstream.fileStore.pvc.enabled":                          true,
		"config.jetstream.memoryStore.enabled":                            false,
		"config.monitor.enabled":                                          true,
		"promExporter.enabled":                                            true,
		"container.env.TETHER_AGENTS_PASSWORD.valueFrom.secretKeyRef.key": "agent-password",
		"container.env.TETHER_SERVE_PASSWORD.valueFrom.secretKeyRef.key":  "serve-password",
	} {
		if got := get(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	if s, _ := get("config.jetstream.fileStore.pvc.size").(string); s == "" {
		t.Error("config.jetstream.fileStore.pvc.size: not set")
	} else if _, err := resource.ParseQuantity(s); err != nil {
		t.Errorf("config.jetstream.fileStore.pvc.size %q: %v", s, err)
	}

	// The users serve and the agents name with --nats-user, with their
	// passwords from the environment the chart fills from the Secret.
	o := load(t)
	users := map[string]string{}
	list, _ := get("config.merge.authorization.users").([]any)
	for _, u := range list {
		m, _ := u.(map[string]any)
		name, _ := m["user"].(string)
		pw, _ := m["password"].(string)
		users[name] = pw
	}
	for deploy, envName := range map[string]string{"tether-agent": "TETHER_AGENTS_PASSWORD", "tether-serve": "TETHER_SERVE_PASSWORD"} {
		c := only(t, o.deployments[deploy])
		user, _ := flagValue(c.Args, "nats-user")
		if want := "<< $" + envName + " >>"; users[user] != want {
			t.Errorf("%s logs in as %q, whose password in the values is %q, want %q", deploy, user, users[user], want)
		}
		// Both sides read the same Secret key.
		chartKey, _ := get("container.env." + envName + ".valueFrom.secretKeyRef.key").(string)
		chartName, _ := get("container.env." + envName + ".valueFrom.secretKeyRef.name").(string)
		pod := env(c, "TETHER_NATS_PASSWORD")
		if pod == nil || pod.ValueFrom == nil || pod.ValueFrom.SecretKeyRef == nil ||
			pod.ValueFrom.SecretKeyRef.Name != chartName || pod.ValueFrom.SecretKeyRef.Key != chartKey {
			t.Errorf("%s: TETHER_NATS_PASSWORD %+v is not the Secret key the NATS servers use (%s/%s)", deploy, pod, chartName, chartKey)
		}
		if r, _ := flagValue(c.Args, "replicas"); deploy == "tether-agent" && r != "3" {
			t.Errorf("%s: --replicas %q, want 3 (the NATS cluster's size)", deploy, r)
		}
	}
}
