package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The deploy files (deploy/Dockerfile, compose.yaml, k8s/, systemd/) cannot
// run here; these tests read them and check that every voiced command,
// --flag and VOICED_* variable they name exists in that command's --help,
// and that the Kubernetes manifests hang together.

const deployDir = "../../deploy"

// invocation is one way a deploy file runs voiced: the command and the
// flags and variables it gets.
type invocation struct {
	where string
	cmd   string
	flags []string
	env   map[string]string
}

// helpTable is what `voiced CMD --help` lists, per command.
type helpTable map[string]struct{ flags, env map[string]bool }

var (
	helpFlagRx = regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)
	helpEnvRx  = regexp.MustCompile(`\(env (VOICED_[A-Z0-9_]+)\)`)
	voicedVar  = regexp.MustCompile(`\bVOICED_[A-Z0-9_]+`)
)

// help runs `voiced cmd --help` (once per command) and records its flags
// and variables; an unknown command is an error.
func (h helpTable) lookup(cmd string) (struct{ flags, env map[string]bool }, error) {
	if e, ok := h[cmd]; ok {
		return e, nil
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{cmd, "--help"}, &out, &errOut)
	if !errors.Is(err, flag.ErrHelp) {
		return struct{ flags, env map[string]bool }{}, fmt.Errorf("voiced %s --help: %v %s", cmd, err, errOut.String())
	}
	e := struct{ flags, env map[string]bool }{map[string]bool{}, map[string]bool{}}
	for _, m := range helpFlagRx.FindAllStringSubmatch(out.String(), -1) {
		e.flags[m[1]] = true
	}
	for _, m := range helpEnvRx.FindAllStringSubmatch(out.String(), -1) {
		e.env[m[1]] = true
	}
	if len(e.flags) == 0 || len(e.env) == 0 {
		return e, fmt.Errorf("voiced %s --help lists no flags", cmd)
	}
	h[cmd] = e
	return e, nil
}

// refused are flags a command lists only to refuse them (mediaRole).
var refused = map[string][]string{"media": {"database-url"}}

// roles are the long-running commands: they serve HTTP and drain on SIGTERM.
var longRunning = []string{"serve", "control", "media"}

// check returns one problem per command, flag or variable that does not
// exist for the command it is given to.
func (h helpTable) check(invs []invocation) []string {
	var probs []string
	for _, inv := range invs {
		e, err := h.lookup(inv.cmd)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: unknown command %q: %v", inv.where, inv.cmd, err))
			continue
		}
		for _, f := range inv.flags {
			name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
			switch {
			case !e.flags[name]:
				probs = append(probs, fmt.Sprintf("%s: voiced %s has no flag %s", inv.where, inv.cmd, f))
			case slices.Contains(refused[inv.cmd], name):
				probs = append(probs, fmt.Sprintf("%s: voiced %s refuses %s", inv.where, inv.cmd, f))
			}
		}
		for v := range inv.env {
			if !strings.HasPrefix(v, "VOICED_") {
				continue
			}
			switch {
			case !e.env[v]:
				probs = append(probs, fmt.Sprintf("%s: voiced %s has no variable %s", inv.where, inv.cmd, v))
			case slices.ContainsFunc(refused[inv.cmd], func(f string) bool { return v == flagEnv(f) }):
				probs = append(probs, fmt.Sprintf("%s: voiced %s refuses %s", inv.where, inv.cmd, v))
			}
		}
	}
	return probs
}

func flagEnv(name string) string {
	return "VOICED_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// anyVariable checks every VOICED_* word of text (comments too) against
// the variables of every command.
func (h helpTable) anyVariable(where, text string) []string {
	all := map[string]bool{}
	for _, cmd := range []string{"serve", "control", "media", "migrate"} {
		e, err := h.lookup(cmd)
		if err != nil {
			return []string{err.Error()}
		}
		for v := range e.env {
			all[v] = true
		}
	}
	var probs []string
	for _, v := range voicedVar.FindAllString(text, -1) {
		if !all[v] {
			probs = append(probs, fmt.Sprintf("%s: no command has variable %s", where, v))
		}
	}
	return probs
}

// graceNeeded is how long a stop must wait for a draining node: its
// --drain-timeout plus the HTTP drain (README "Kamailio in front of SIP").
func graceNeeded(inv invocation) (time.Duration, bool) {
	if inv.cmd != "serve" && inv.cmd != "media" {
		return 0, false
	}
	d := 30 * time.Second
	if v, ok := inv.env["VOICED_DRAIN_TIMEOUT"]; ok {
		if p, err := time.ParseDuration(v); err == nil {
			d = p
		}
	}
	return d + 20*time.Second, true
}

var (
	composeDefault = regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`)
	composeNeeded  = regexp.MustCompile(`\$\{[A-Z_]+:\?[^}]*\}`)
	k8sVar         = regexp.MustCompile(`\$\([A-Z_]+\)`)
)

// validate parses inv's flags and variables as voiced does (the flags of
// its command, then validation), with what the deployer fills in for the
// placeholders: compose's ${X:-default} its default, ${X:?} and CHANGE-ME a
// good secret, Kubernetes' $(HOST_IP) an address.
func (h helpTable) validate(t *testing.T, inv invocation) error {
	e, err := h.lookup(inv.cmd)
	if err != nil {
		return err
	}
	var err2 error
	t.Run("", func(t *testing.T) {
		secret := strings.Repeat("0123456789abcdef", 4)
		for k, v := range inv.env {
			if !strings.HasPrefix(k, "VOICED_") {
				continue
			}
			v = composeDefault.ReplaceAllString(v, "$1")
			v = composeNeeded.ReplaceAllString(v, secret)
			v = k8sVar.ReplaceAllString(v, "10.0.0.7")
			t.Setenv(k, strings.ReplaceAll(v, "CHANGE-ME", secret))
		}
		var names []string
		for f := range e.flags {
			names = append(names, f)
		}
		var c config
		_, err2 = parse(inv.cmd, "", inv.flags, io.Discard, &c, nil, names...)
	})
	return err2
}

// ---- Dockerfile

type dockerStage struct {
	name, from, user string
	entrypoint, cmd  []string
	env              map[string]string
	expose           []string
}

func parseDockerfile(text string) ([]dockerStage, error) {
	var stages []dockerStage
	sc := bufio.NewScanner(strings.NewReader(text))
	var line string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && line == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			line += cont + " "
			continue
		}
		line += l
		instr, rest, _ := strings.Cut(line, " ")
		line = ""
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			f := strings.Fields(rest)
			st := dockerStage{from: f[0], env: map[string]string{}}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if instr == "ARG" {
				continue
			}
			return nil, fmt.Errorf("%s before FROM", instr)
		}
		st := &stages[len(stages)-1]
		switch instr {
		case "USER":
			st.user = strings.TrimSpace(rest)
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				return nil, fmt.Errorf("%s %s: want the exec (JSON) form: %v", instr, rest, err)
			}
			if instr == "CMD" {
				st.cmd = v
			} else {
				st.entrypoint = v
			}
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, fmt.Errorf("ENV %s: want KEY=VALUE", rest)
				}
				st.env[k] = v
			}
		case "EXPOSE":
			st.expose = append(st.expose, strings.Fields(rest)...)
		}
	}
	return stages, sc.Err()
}

// checkDockerfile returns the image's default invocation and problems with
// its shape: multi-stage on Debian, the last stage voiced, non-root.
func checkDockerfile(text string) ([]invocation, []string) {
	stages, err := parseDockerfile(text)
	if err != nil {
		return nil, []string{"Dockerfile: " + err.Error()}
	}
	var probs []string
	if len(stages) < 2 {
		probs = append(probs, "Dockerfile: want a multi-stage build")
		return nil, probs
	}
	last := stages[len(stages)-1]
	for _, st := range stages {
		if !strings.HasPrefix(st.from, "debian:") && !strings.Contains(st.from, "bookworm") {
			probs = append(probs, fmt.Sprintf("Dockerfile: stage %s is not Debian (%s)", st.name, st.from))
		}
	}
	if !slices.Equal(last.entrypoint, []string{"voiced"}) || len(last.cmd) == 0 {
		probs = append(probs, fmt.Sprintf("Dockerfile: the last stage must be ENTRYPOINT [\"voiced\"] with a CMD, have %q %q", last.entrypoint, last.cmd))
		return nil, probs
	}
	if last.user == "" || last.user == "root" || last.user == "0" {
		probs = append(probs, "Dockerfile: the voiced stage runs as root")
	}
	inv := invocation{where: "Dockerfile CMD", cmd: last.cmd[0], flags: last.cmd[1:], env: last.env}
	if _, port, err := net.SplitHostPort(last.env["VOICED_HTTP_ADDR"]); err != nil || !slices.Contains(last.expose, port+"/tcp") {
		probs = append(probs, fmt.Sprintf("Dockerfile: EXPOSE %q lacks VOICED_HTTP_ADDR's port (%q)", last.expose, last.env["VOICED_HTTP_ADDR"]))
	}
	return []invocation{inv}, probs
}

// ---- compose.yaml

func isVoicedImage(image string) bool {
	return image == "voiced/voiced" || strings.HasPrefix(image, "voiced/voiced:")
}

// checkCompose returns the voiced services' invocations and problems:
// unknown build targets, and two services on one host taking one port.
func checkCompose(text string, stages []string) ([]invocation, []string) {
	var doc struct {
		Services map[string]struct {
			Image string `yaml:"image"`
			Build *struct {
				Dockerfile string `yaml:"dockerfile"`
				Target     string `yaml:"target"`
			} `yaml:"build"`
			Command         []string          `yaml:"command"`
			Environment     map[string]string `yaml:"environment"`
			NetworkMode     string            `yaml:"network_mode"`
			StopGracePeriod string            `yaml:"stop_grace_period"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, []string{"compose.yaml: " + err.Error()}
	}
	var invs []invocation
	var probs []string
	taken := map[string]string{}
	for name, s := range doc.Services {
		if s.Image == "" && s.Build == nil {
			probs = append(probs, fmt.Sprintf("compose.yaml: service %s has no image", name))
		}
		if s.Build != nil && s.Build.Target != "" && !slices.Contains(stages, s.Build.Target) {
			probs = append(probs, fmt.Sprintf("compose.yaml: service %s builds target %q, not a stage of deploy/Dockerfile", name, s.Build.Target))
		}
		if !isVoicedImage(s.Image) {
			continue
		}
		if len(s.Command) == 0 {
			probs = append(probs, fmt.Sprintf("compose.yaml: service %s gives no voiced command", name))
			continue
		}
		inv := invocation{where: "compose.yaml service " + name, cmd: s.Command[0], flags: s.Command[1:], env: s.Environment}
		invs = append(invs, inv)
		if need, ok := graceNeeded(inv); ok {
			if g, err := time.ParseDuration(s.StopGracePeriod); err != nil || g < need {
				probs = append(probs, fmt.Sprintf("compose.yaml: service %s stop_grace_period %q is under --drain-timeout + 20s (%s)", name, s.StopGracePeriod, need))
			}
		}
		if s.NetworkMode != "host" {
			continue
		}
		for _, v := range []string{"VOICED_HTTP_ADDR", "VOICED_INTERNAL_ADDR", "VOICED_SIP_ADDR", "VOICED_RTP_PORTS", "VOICED_WEBRTC_UDP_ADDR"} {
			val, ok := s.Environment[v]
			if !ok {
				continue
			}
			_, port, err := net.SplitHostPort(val)
			if err != nil {
				port = val
			}
			if other, dup := taken[v+port]; dup {
				probs = append(probs, fmt.Sprintf("compose.yaml: services %s and %s both take %s %s on the host network", other, name, v, port))
			}
			taken[v+port] = name
		}
	}
	return invs, probs
}

// ---- Kubernetes

type k8sObject struct {
	where string
	raw   map[string]any
}

func (o k8sObject) str(path ...string) string {
	s, _ := dig(o.raw, path...).(string)
	return s
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func list(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func decodeK8s(file, text string) ([]k8sObject, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var out []k8sObject
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		if m != nil {
			out = append(out, k8sObject{where: fmt.Sprintf("%s#%d", file, i), raw: m})
		}
	}
}

var workloadKinds = []string{"Deployment", "DaemonSet", "StatefulSet", "Job"}

// checkK8s returns the voiced containers' invocations and problems with
// the manifests: missing kind/apiVersion/name, containers without image
// or arguments, unknown ConfigMaps and Secrets, selectors that select
// nothing, Service target ports and probe ports no container has, and
// listen addresses that disagree with the declared ports.
func checkK8s(objs []k8sObject) ([]invocation, []string) {
	var probs []string
	bad := func(o k8sObject, format string, a ...any) {
		probs = append(probs, fmt.Sprintf("%s (%s %s): ", o.where, o.str("kind"), o.str("metadata", "name"))+fmt.Sprintf(format, a...))
	}
	data := map[string]map[string]string{} // "ConfigMap/name" -> keys
	for _, o := range objs {
		if o.str("apiVersion") == "" || o.str("kind") == "" || o.str("metadata", "name") == "" {
			bad(o, "want apiVersion, kind and metadata.name")
		}
		if o.str("kind") != "Namespace" && o.str("metadata", "namespace") == "" {
			bad(o, "no metadata.namespace")
		}
		if k := o.str("kind"); k == "ConfigMap" || k == "Secret" {
			keys := map[string]string{}
			for _, f := range []string{"data", "stringData"} {
				m, _ := dig(o.raw, f).(map[string]any)
				for k, v := range m {
					keys[k] = fmt.Sprint(v)
				}
			}
			data[k+"/"+o.str("metadata", "name")] = keys
		}
	}
	type podPort struct{ name, protocol string }
	type workload struct {
		labels map[string]any
		ports  map[string]podPort // port number and name -> port
	}
	var workloads []workload
	var invs []invocation
	for _, o := range objs {
		if !slices.Contains(workloadKinds, o.str("kind")) {
			continue
		}
		tmpl := dig(o.raw, "spec", "template")
		labels, _ := dig(tmpl, "metadata", "labels").(map[string]any)
		if o.str("kind") != "Job" {
			sel, _ := dig(o.raw, "spec", "selector", "matchLabels").(map[string]any)
			if len(sel) == 0 {
				bad(o, "no spec.selector.matchLabels")
			}
			for k, v := range sel {
				if labels[k] != v {
					bad(o, "selector %s=%v does not match the pod template's labels", k, v)
				}
			}
		}
		pod := dig(tmpl, "spec")
		containers := list(dig(pod, "containers"))
		if len(containers) == 0 {
			bad(o, "no containers")
		}
		w := workload{labels: labels, ports: map[string]podPort{}}
		for _, c := range append(containers, list(dig(pod, "initContainers"))...) {
			cname, _ := c["name"].(string)
			image, _ := c["image"].(string)
			args, command := strs(c["args"]), strs(c["command"])
			if cname == "" || image == "" {
				bad(o, "container %q: want name and image", cname)
			}
			if len(args) == 0 && len(command) == 0 {
				bad(o, "container %q: no args or command", cname)
			}
			env := map[string]string{}
			for _, e := range list(c["env"]) {
				n, _ := e["name"].(string)
				v := fmt.Sprint(e["value"])
				if ref, ok := dig(e, "valueFrom", "secretKeyRef").(map[string]any); ok {
					keys, found := data["Secret/"+fmt.Sprint(ref["name"])]
					if !found {
						bad(o, "container %q: env %s: no Secret %v", cname, n, ref["name"])
					} else if v, found = keys[fmt.Sprint(ref["key"])]; !found {
						bad(o, "container %q: env %s: Secret %v has no key %v", cname, n, ref["name"], ref["key"])
					}
				}
				env[n] = v
			}
			for _, ef := range list(c["envFrom"]) {
				for kind, field := range map[string]string{"ConfigMap": "configMapRef", "Secret": "secretRef"} {
					ref, ok := ef[field].(map[string]any)
					if !ok {
						continue
					}
					keys, found := data[kind+"/"+fmt.Sprint(ref["name"])]
					if !found {
						bad(o, "container %q: envFrom: no %s %v", cname, kind, ref["name"])
					}
					for k, v := range keys {
						if _, set := env[k]; !set {
							env[k] = v
						}
					}
				}
			}
			named := map[string]string{} // port name -> number
			for _, p := range list(c["ports"]) {
				num := fmt.Sprint(p["containerPort"])
				proto := fmt.Sprint(p["protocol"])
				if p["protocol"] == nil {
					proto = "TCP"
				}
				if n, ok := p["name"].(string); ok {
					named[n] = num
					w.ports[n] = podPort{n, proto}
				}
				w.ports[num+"/"+proto] = podPort{num, proto}
			}
			for _, probe := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
				hg := dig(c, probe, "httpGet")
				if hg == nil {
					continue
				}
				if p := fmt.Sprint(dig(hg, "path")); p != "/v1/healthz" {
					bad(o, "container %q: %s path %s is not voiced's GET /v1/healthz", cname, probe, p)
				}
				port := fmt.Sprint(dig(hg, "port"))
				if _, ok := named[port]; !ok && !slices.Contains(slices.Collect(maps.Values(named)), port) {
					bad(o, "container %q: %s port %s is no port of the container", cname, probe, port)
				}
			}
			if !isVoicedImage(image) {
				continue
			}
			if len(command) > 0 || len(args) == 0 {
				bad(o, "container %q: give the voiced command as args (the image's entrypoint is voiced)", cname)
				continue
			}
			inv := invocation{where: fmt.Sprintf("%s container %s", o.where, cname), cmd: args[0], flags: args[1:], env: env}
			invs = append(invs, inv)
			if !slices.Contains(longRunning, inv.cmd) {
				continue
			}
			if need, ok := graceNeeded(inv); ok {
				g, _ := dig(pod, "terminationGracePeriodSeconds").(int)
				if time.Duration(g)*time.Second < need {
					bad(o, "terminationGracePeriodSeconds %d is under --drain-timeout + 20s (%s)", g, need)
				}
			}
			if named["http"] == "" {
				bad(o, "container %q: no port named http", cname)
			}
			for v, pname := range map[string]string{"VOICED_HTTP_ADDR": "http", "VOICED_INTERNAL_ADDR": "internal", "VOICED_SIP_ADDR": "sip", "VOICED_WEBRTC_UDP_ADDR": "webrtc"} {
				val, set := env[v]
				if !set {
					if pname == "http" {
						bad(o, "container %q: no %s (the default listens on loopback only)", cname, v)
					}
					continue
				}
				_, port, err := net.SplitHostPort(val)
				if err != nil {
					bad(o, "container %q: %s=%q: %v", cname, v, val, err)
				} else if named[pname] != "" && named[pname] != port {
					bad(o, "container %q: %s=%q but port %s is %s", cname, v, val, pname, named[pname])
				}
			}
		}
		workloads = append(workloads, w)
	}
	for _, o := range objs {
		if o.str("kind") != "Service" {
			continue
		}
		sel, _ := dig(o.raw, "spec", "selector").(map[string]any)
		var target *workload
		for i, w := range workloads {
			match := len(sel) > 0
			for k, v := range sel {
				match = match && w.labels[k] == v
			}
			if match {
				target = &workloads[i]
				break
			}
		}
		if target == nil {
			bad(o, "selector %v selects no workload", sel)
			continue
		}
		for _, p := range list(dig(o.raw, "spec", "ports")) {
			proto := fmt.Sprint(p["protocol"])
			if p["protocol"] == nil {
				proto = "TCP"
			}
			tp := fmt.Sprint(p["targetPort"])
			if p["targetPort"] == nil {
				tp = fmt.Sprint(p["port"])
			}
			pp, ok := target.ports[tp]
			if !ok {
				pp, ok = target.ports[tp+"/"+proto]
			}
			if !ok || pp.protocol != proto {
				bad(o, "targetPort %s/%s is no port of the selected pods", tp, proto)
			}
		}
	}
	return invs, probs
}

// ---- systemd

// checkUnit returns a unit's invocation and problems: no voiced ExecStart,
// missing hardening, a stop timeout shorter than the drain. envFiles maps
// an EnvironmentFile's base name to the example file's text.
func checkUnit(name, text string, envFiles map[string]string) ([]invocation, []string) {
	kv := map[string][]string{}
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") || strings.HasPrefix(l, "[") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, []string{fmt.Sprintf("%s: %q is not KEY=VALUE", name, l)}
		}
		kv[k] = append(kv[k], v)
	}
	var probs []string
	if len(kv["ExecStart"]) != 1 {
		return nil, []string{name + ": want one ExecStart"}
	}
	f := strings.Fields(kv["ExecStart"][0])
	if len(f) < 2 || filepath.Base(f[0]) != "voiced" || !filepath.IsAbs(f[0]) {
		return nil, []string{fmt.Sprintf("%s: ExecStart %q does not run /path/to/voiced COMMAND", name, kv["ExecStart"][0])}
	}
	inv := invocation{where: name, cmd: f[1], flags: f[2:], env: map[string]string{}}
	for _, e := range kv["Environment"] {
		for _, pair := range strings.Fields(e) {
			k, v, _ := strings.Cut(strings.Trim(pair, `"`), "=")
			inv.env[k] = v
		}
	}
	for _, ef := range kv["EnvironmentFile"] {
		body, ok := envFiles[filepath.Base(strings.TrimPrefix(ef, "-"))]
		if !ok {
			probs = append(probs, fmt.Sprintf("%s: EnvironmentFile %s has no example in deploy/systemd", name, ef))
			continue
		}
		// Commented-out settings are suggestions: they must fit the command too.
		for _, l := range strings.Split(body, "\n") {
			l = strings.TrimPrefix(strings.TrimSpace(l), "#")
			if k, v, ok := strings.Cut(l, "="); ok && voicedVar.MatchString(k) && !strings.Contains(k, " ") {
				inv.env[k] = v
			}
		}
	}
	for _, want := range [][2]string{{"NoNewPrivileges", "yes"}, {"PrivateTmp", "yes"}, {"ProtectHome", "yes"}} {
		if !slices.Contains(kv[want[0]], want[1]) {
			probs = append(probs, fmt.Sprintf("%s: want %s=%s", name, want[0], want[1]))
		}
	}
	if !slices.Contains(kv["ProtectSystem"], "strict") && !slices.Contains(kv["ProtectSystem"], "full") {
		probs = append(probs, name+": want ProtectSystem=strict")
	}
	if !slices.Contains(kv["DynamicUser"], "yes") && (len(kv["User"]) == 0 || kv["User"][0] == "root") {
		probs = append(probs, name+": runs as root; want DynamicUser=yes or User=")
	}
	if need, ok := graceNeeded(inv); ok {
		var g time.Duration
		if len(kv["TimeoutStopSec"]) > 0 {
			s, err := strconv.Atoi(kv["TimeoutStopSec"][0])
			if err != nil {
				g, _ = time.ParseDuration(kv["TimeoutStopSec"][0])
			} else {
				g = time.Duration(s) * time.Second
			}
		}
		if g < need {
			probs = append(probs, fmt.Sprintf("%s: TimeoutStopSec %s is under --drain-timeout + 20s (%s)", name, g, need))
		}
	}
	return []invocation{inv}, probs
}

// ---- all of deploy/

func readDeploy(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, rel))
	require.NoError(t, err)
	return string(b)
}

func TestDeployFilesUseRealCommandsFlagsAndVariables(t *testing.T) {
	h := helpTable{}
	var invs []invocation
	var probs []string
	add := func(i []invocation, p []string) {
		invs = append(invs, i...)
		probs = append(probs, p...)
	}
	texts := map[string]string{}

	dockerfile := readDeploy(t, "Dockerfile")
	texts["Dockerfile"] = dockerfile
	add(checkDockerfile(dockerfile))
	stages, err := parseDockerfile(dockerfile)
	require.NoError(t, err)
	var stageNames []string
	for _, s := range stages {
		stageNames = append(stageNames, s.name)
	}

	compose := readDeploy(t, "compose.yaml")
	texts["compose.yaml"] = compose
	add(checkCompose(compose, stageNames))

	manifests, err := filepath.Glob(filepath.Join(deployDir, "k8s", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, manifests)
	var objs []k8sObject
	for _, m := range manifests {
		rel, _ := filepath.Rel(deployDir, m)
		text := readDeploy(t, rel)
		texts[rel] = text
		o, err := decodeK8s(rel, text)
		require.NoError(t, err)
		objs = append(objs, o...)
	}
	add(checkK8s(objs))

	units, err := filepath.Glob(filepath.Join(deployDir, "systemd", "*.service"))
	require.NoError(t, err)
	envFiles := map[string]string{}
	envs, err := filepath.Glob(filepath.Join(deployDir, "systemd", "*.env"))
	require.NoError(t, err)
	for _, e := range envs {
		rel, _ := filepath.Rel(deployDir, e)
		envFiles[filepath.Base(e)] = readDeploy(t, rel)
		texts[rel] = envFiles[filepath.Base(e)]
	}
	for _, u := range units {
		rel, _ := filepath.Rel(deployDir, u)
		text := readDeploy(t, rel)
		texts[rel] = text
		add(checkUnit(rel, text, envFiles))
	}

	probs = append(probs, h.check(invs)...)
	for where, text := range texts {
		probs = append(probs, h.anyVariable(where, text)...)
	}
	require.Empty(t, probs)
	for _, inv := range invs {
		require.NoError(t, h.validate(t, inv), inv.where)
	}

	// The files run what a fleet runs: every role, from every kind of file.
	got := map[string][]string{}
	for _, inv := range invs {
		kind, _, _ := strings.Cut(inv.where, " ")
		kind = strings.Split(kind, "/")[0]
		got[inv.cmd] = append(got[inv.cmd], kind)
	}
	require.Contains(t, got["serve"], "Dockerfile")
	require.Contains(t, got["serve"], "systemd")
	for _, role := range []string{"control", "media"} {
		for _, kind := range []string{"compose.yaml", "k8s", "systemd"} {
			require.Contains(t, got[role], kind, "voiced %s in %s", role, kind)
		}
	}
	require.Contains(t, got["migrate"], "k8s")
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.str("kind")+"/"+o.str("metadata", "name")] = true
	}
	for _, want := range []string{"Deployment/voiced-control", "Service/voiced-control", "DaemonSet/voiced-media",
		"Deployment/voiced-kamailio", "Service/voiced-sip", "Secret/voiced", "ConfigMap/voiced-control", "ConfigMap/voiced-media"} {
		require.True(t, kinds[want], want)
	}
	require.Equal(t, true, dig(objs[slices.IndexFunc(objs, func(o k8sObject) bool { return o.str("kind") == "DaemonSet" })].raw, "spec", "template", "spec", "hostNetwork"))
}

// TestDeployFileCheckerCatchesMistakes feeds each checker a file with one
// mistake of each kind and wants each named.
func TestDeployFileCheckerCatchesMistakes(t *testing.T) {
	h := helpTable{}
	probsOf := func(invs []invocation, probs []string) string {
		return strings.Join(append(probs, h.check(invs)...), "\n")
	}

	unit := "[Service]\nExecStart=/usr/local/bin/voiced media --databse-url x --database-url y --sip-addr 0.0.0.0:5060\n" +
		"Environment=VOICED_NO_SUCH=1 VOICED_CONTROL_URL=http://c:8081\nEnvironmentFile=/etc/voiced/media.env\nTimeoutStopSec=10\n"
	got := probsOf(checkUnit("bad.service", unit, map[string]string{"media.env": "VOICED_STRIPE_API_KEY=sk\n#VOICED_DRAIN_TIMEOUT=60s\n"}))
	for _, want := range []string{"has no flag --databse-url", "refuses --database-url", "has no variable VOICED_NO_SUCH",
		"has no variable VOICED_STRIPE_API_KEY", "want NoNewPrivileges=yes", "want ProtectSystem=strict", "runs as root",
		"TimeoutStopSec 10s is under --drain-timeout + 20s (1m20s)"} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "--sip-addr")
	require.NotContains(t, got, "VOICED_CONTROL_URL")
	got = probsOf(checkUnit("typo.service", "[Service]\nExecStart=/usr/bin/voiced contrl\n", nil))
	require.Contains(t, got, `unknown command "contrl"`)

	compose := `
services:
  control:
    image: voiced/voiced:latest
    build: {context: .., target: voicedd}
    command: ["control", "--http-adr", "0.0.0.0:8080"]
    network_mode: host
    environment:
      VOICED_SIP_ADDR: 127.0.0.1:5060
      VOICED_HTTP_ADDR: 127.0.0.1:8080
  media:
    image: voiced/voiced:latest
    command: ["media"]
    network_mode: host
    stop_grace_period: 60s
    environment:
      VOICED_DATABASE_URL: postgres://x@y/z
      VOICED_HTTP_ADDR: 127.0.0.1:8080
`
	got = probsOf(checkCompose(compose, []string{"build", "voiced"}))
	for _, want := range []string{`builds target "voicedd"`, "voiced control has no flag --http-adr", "voiced control has no variable VOICED_SIP_ADDR",
		"voiced media refuses VOICED_DATABASE_URL", "both take VOICED_HTTP_ADDR 8080"} {
		require.Contains(t, got, want)
	}

	manifest := `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: voiced}
data: {VOICED_HTTP_ADDR: "0.0.0.0:8080", VOICED_RTP_PORT: "1-2"}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: media, namespace: voiced}
spec:
  selector: {matchLabels: {app: media}}
  template:
    metadata: {labels: {app: medai}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
        - name: media
          image: voiced/voiced:latest
          args: ["media", "--node-idd", "x"]
          envFrom: [{configMapRef: {name: cfg}}, {configMapRef: {name: missing}}]
          env:
            - name: VOICED_CLUSTER_SECRET
              valueFrom: {secretKeyRef: {name: voiced, key: VOICED_CLUSTER_SECRET}}
          ports: [{name: http, containerPort: 8090}]
          readinessProbe: {httpGet: {path: /healthz, port: metrics}}
        - name: sidecar
---
apiVersion: v1
kind: Service
metadata: {name: media}
spec:
  selector: {app: medai}
  ports: [{port: 5060, targetPort: sip, protocol: UDP}]
---
kind: Service
metadata: {name: nothing, namespace: voiced}
spec:
  selector: {app: none}
`
	objs, err := decodeK8s("bad.yaml", manifest)
	require.NoError(t, err)
	got = probsOf(checkK8s(objs))
	for _, want := range []string{"selector app=media does not match", "no ConfigMap missing", "no Secret voiced",
		"voiced media has no flag --node-idd", "voiced media has no variable VOICED_RTP_PORT", "path /healthz is not",
		"port metrics is no port", `container "sidecar": want name and image`, `container "sidecar": no args or command`,
		`VOICED_HTTP_ADDR="0.0.0.0:8080" but port http is 8090`, "terminationGracePeriodSeconds 30 is under",
		"targetPort sip/UDP is no port", "(Service media): no metadata.namespace", "want apiVersion, kind and metadata.name",
		"selects no workload"} {
		require.Contains(t, got, want)
	}

	dockerfile := "FROM golang:1.26-bookworm AS build\nRUN true\nFROM alpine AS run\nENV VOICED_HTTP_ADDR=0.0.0.0:8080\nEXPOSE 9090/tcp\nENTRYPOINT [\"voiced\"]\nCMD [\"srve\"]\n"
	got = probsOf(checkDockerfile(dockerfile))
	for _, want := range []string{"stage run is not Debian", "runs as root", "lacks VOICED_HTTP_ADDR's port", `unknown command "srve"`} {
		require.Contains(t, got, want)
	}
	err = h.validate(t, invocation{where: "x", cmd: "media", env: map[string]string{"VOICED_RTP_PORTS": "20000-10000", "VOICED_HTTP_ADDR": "${HOST_IP:-127.0.0.1}:8091"}})
	require.ErrorContains(t, err, "rtp-ports")
	require.NoError(t, h.validate(t, invocation{where: "x", cmd: "media", env: map[string]string{"VOICED_RTP_PORTS": "10000-10999", "VOICED_SIP_ADDR": "$(HOST_IP):5070"}}))
	require.Contains(t, strings.Join(h.anyVariable("README", "set VOICED_HTTP_ADDR and VOICED_HTTP_PORT"), "\n"), "no command has variable VOICED_HTTP_PORT")
}
