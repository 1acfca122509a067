package voiced

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
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

// TestTypesStaySmall enforces STYLE.md ("Packages and files"): no type
// grows past about 40 methods. It counts the methods declared on each
// receiver type (not promoted ones) in non-test files of the control
// plane, storage and the live call, where the 100-method types were.
func TestTypesStaySmall(t *testing.T) {
	const max = 40
	counts := map[string]int{}
	fset := token.NewFileSet()
	for _, root := range []string{"control", "storage", "call"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
					continue
				}
				typ := fd.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				switch x := typ.(type) {
				case *ast.IndexExpr:
					typ = x.X
				case *ast.IndexListExpr:
					typ = x.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					counts[filepath.Dir(path)+"."+id.Name]++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if counts["control.Server"] == 0 {
		t.Fatal("no methods of control.Server found: receivers not understood")
	}
	for typ, n := range counts {
		if n > max {
			t.Errorf("%s has %d methods; STYLE.md: no type past about %d (split it by domain)", typ, n, max)
		}
	}
}
