package voiced

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/voiced/voiced/"

// TestImportDirections enforces DESIGN.md section 2: codecs <- media <- sip;
// ai is imported by media/agent, call and control; control and media never
// import each other; call joins media, sip and ai to control's types and is
// imported only by cmd; storage is imported only by control and cmd (never
// under call/, tests included); media/prefetch only by media.
func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "nolibopusfile", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	top := func(p string) string {
		p = strings.TrimPrefix(p, mod)
		if i := strings.IndexByte(p, '/'); i >= 0 {
			return p[:i]
		}
		return p
	}
	// forbidden[a] lists the top-level trees package tree a must not import.
	forbidden := map[string][]string{
		"codecs":  {"media", "sip", "ai", "control", "storage", "call", "cmd", "web"},
		"media":   {"sip", "control", "storage", "call", "cmd"},
		"sip":     {"control", "storage", "ai", "call", "cmd"},
		"ai":      {"media", "sip", "control", "storage", "call", "cmd"},
		"control": {"media", "sip", "call", "cmd"},
		"storage": {"codecs", "media", "sip", "ai", "control", "call", "cmd"},
		"call":    {"storage", "cmd", "web"},
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], mod) {
			continue
		}
		f := append([]string{parts[0]}, strings.Fields(parts[1])...)
		from := top(f[0])
		if from == "call" {
			// No storage under call/, not even in its tests: a media
			// node runs without a database.
			f = append(f, strings.Fields(parts[2])...)
		}
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			to := top(imp)
			checked++
			for _, bad := range forbidden[from] {
				if to == bad {
					t.Errorf("%s imports %s: %s may not import %s (DESIGN.md section 2)", f[0], imp, from, bad)
				}
			}
			if from == "media" && to == "ai" && !strings.HasPrefix(f[0], mod+"media/agent") {
				t.Errorf("%s imports %s: only media/agent may import ai", f[0], imp)
			}
			if imp == mod+"media/prefetch" && from != "media" {
				t.Errorf("%s imports %s: hot-address lists stay in media (rtp.Lines and agent's InputLines name the call layer's memory)", f[0], imp)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no intra-module imports found: go list output not understood")
	}
}
