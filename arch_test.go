package voiced

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/voiced/voiced/"

// TestImportDirections enforces DESIGN.md section 2: codecs <- media <- sip;
// ai is imported by media/agent and control; control and media never import
// each other; storage is imported only by control and cmd.
func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "nolibopusfile", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
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
		"codecs":  {"media", "sip", "ai", "control", "storage", "cmd", "web"},
		"media":   {"sip", "control", "storage", "cmd"},
		"sip":     {"control", "storage", "ai", "cmd"},
		"ai":      {"media", "sip", "control", "storage", "cmd"},
		"control": {"media", "sip", "cmd"},
		"storage": {"codecs", "media", "sip", "ai", "control", "cmd"},
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		from := top(f[0])
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
		}
	}
	if checked == 0 {
		t.Fatal("no intra-module imports found: go list output not understood")
	}
}

// TestControlDomainsDeclareTheirStores enforces DESIGN.md section 2 and
// STYLE.md ("Interfaces and construction") for the control plane's domain
// packages: each declares the store interface it consumes, so none of
// them names a concrete store type of package storage (Store, KeyStore,
// ...). They may import storage for its row types and errors. control/api,
// which both control and the domains import, stays a leaf: of this module
// it imports only storage. The test helper packages (calltest, controltest)
// build real stores and are exempt.
func TestControlDomainsDeclareTheirStores(t *testing.T) {
	files, err := filepath.Glob("control/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "control/calltest/") || strings.HasPrefix(path, "control/controltest/") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if strings.HasPrefix(path, "control/api/") {
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if strings.HasPrefix(p, mod) && p != mod+"storage" {
					t.Errorf("%s imports %s: control/api may import only storage of this module", path, p)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "storage" && strings.HasSuffix(sel.Sel.Name, "Store") {
				t.Errorf("%s: names storage.%s; a domain package declares the store interface it consumes", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no control domain package files found")
	}
}
